"""``python -m ember.backends``: each backend plugin and its status."""
from ember.backends import available

for name, status in available().items():
    print(f"{name}: {status}")

"""``ember.nn.functional``: the nn ops of the schema plus the functions written on top of them."""
from ...dispatch.ops import F as _F
from ...dispatch.schema import OPS as _OPS

# Every nn-category op of the schema (conv2d, max_pool2d, softmax, relu, pad, one_hot, ...), and the
# elementwise ones PyTorch also exposes here.
for _name, _op in _OPS.items():
    if _op.category == "nn":
        globals()[_name] = getattr(_F, _name)
sigmoid = _F.sigmoid
tanh = _F.tanh

from .activation import *  # noqa: E402,F401,F403
from .attention import *  # noqa: E402,F401,F403
from .ctc import *  # noqa: E402,F401,F403
from .dropout import *  # noqa: E402,F401,F403
from .embedding import *  # noqa: E402,F401,F403
from .linear import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .sampling import *  # noqa: E402,F401,F403
from .fold import *  # noqa: E402,F401,F403
from .spatial_transformer import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .conv_tbc import *  # noqa: E402,F401,F403

"""Being written: clip_grad_norm_, clip_grad_value_, parameters_to_vector."""

"""ember.optim: optimizers whose step() is one fused C++ call per parameter group."""

"""The analytical model's counts: parameters, FLOPs, the activations a forward saves, what fine-tuning trains (LoRA,
heads, the modules HF builds), serving bytes, sweeps, the paper's results. Below step/, which builds the training
step's memory on them. No torch.
"""

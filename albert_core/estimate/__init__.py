"""The analytical model: parameters, activations, training memory, FLOPs, fit, fine-tuning, serving, sweeps, the
paper's results: what albert_core estimates, in closed forms and replays. No torch.
"""

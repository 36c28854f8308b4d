"""The replay of what autograd keeps: the symbolic training forward (symbolic.py), the no_grad eval forward
(liveness.py), and the training step's backward op by op (backward*.py, step.py). No torch.
"""

"""The training step: its memory (training.py: weights, gradients, optimizer state, activations, ZeRO, the peak),
the peak replayed op by op (peak.py: the forward on graph.py's Graph by bert_forward.py and mpnet_forward.py, the
backward by backward*.py, the optimizer's temporaries by optimizer_step.py), and what is planned on it (fit.py: the
largest batch and sequence that fit; compare.py: configs side by side at one workload). No torch.
"""

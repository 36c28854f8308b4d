"""What a forward saves, symbolically: sizes as polynomials in the batch B and the sequence S (symbolic.py), BERT's
op sequences that the families' replays share (bert_replay.py), the no_grad forward's liveness (liveness.py).
Below the families, which declare their replays with it. No torch.
"""

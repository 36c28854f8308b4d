"""The measurement engine: PyTorch runs the real model on fake tensors or real ones (core.py: the three
measurements; types.py: their settings and results; building.py: the model made ready; dispatch.py: the dispatch mode
that follows every storage), beside the estimates (measure.py); models.py and reference.py build the models;
albert_core/processes/ runs it for Verify in another process. torch is imported only when used.
"""

"""The tensors of a run: the tensor (view) forest, memory, address lookup, access patterns and the tensor
stall cost with its advice."""

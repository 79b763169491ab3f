"""The launcher's support for workers (torch.distributed.elastic's names)."""

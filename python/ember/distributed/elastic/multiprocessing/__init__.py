"""Worker error reporting for the launcher (torch.distributed.elastic.multiprocessing)."""

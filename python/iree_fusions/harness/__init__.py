"""The script API and test harness: compile in a child process and run (`api`), numerics and
latency comparisons, PyTorch in (`torch_api`), bundles written for other machines, and the
passes' reports, typed."""

"""The live view: the checkpoints a running query's driver completes, as values, as a callback
and as a self-refreshing notebook display."""

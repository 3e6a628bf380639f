"""rockstate's torture suite: real queries on ``local-cluster`` under a seeded fault schedule.

``orchestrator.run`` drives one driver process (``driver.py``) running every query kind at
once, kills and pauses executors and the driver at exact points (through the fault-injecting
``rsfault://`` file system) and at random moments, then checks every batch's output and every
retained version's state against an unfaulted oracle run on ``HDFSBackedStateStoreProvider``.
``bench/torture.py`` is the command line; ``tests/long/test_torture_every_fault.py`` runs a
short seed of every fault kind in the long tier.
"""

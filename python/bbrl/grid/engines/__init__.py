"""Engines that run a grid's cells elsewhere than in this process: a Dask cluster
(:mod:`~bbrl.grid.engines.dask_engine`) or a SLURM job array (:mod:`~bbrl.grid.engines.slurm`).

Every engine writes the output folder exactly as a local run does: each task runs one cell (or
one batch of cells) through :func:`bbrl.grid.runner.run_claimed`, which claims the cell, writes
its file atomically and releases the claim. Scheduling, retries and placement are the engine's.
"""

"""Ensembles on disk: partitioned Parquet datasets, computed by DuckDB out of core.

``ens.to_dataset(folder)`` (:func:`write_dataset`) writes an :class:`~cctviz.Ensemble`
as a folder of Parquet tables (layout: :mod:`cctviz.dataset.layout`);
``cctviz.open_dataset(folder)`` gives a :class:`DatasetEnsemble` whose values stay on
disk and whose statistics DuckDB computes by the model's rules
(:mod:`cctviz.dataset.engine`). With ``open_dataset(folder, client=client)`` (a
``dask.distributed.Client``) its statistics and mean tree are computed on that Dask
cluster instead (:mod:`cctviz.dataset.dask_engine`). DuckDB and Dask come with the
``scale`` extra (``pip install cctviz[scale]``). :func:`write_chunks` writes one from a
stream of chunks of profiles over one tree, holding one chunk at a time.
"""

from .chunked import write_chunks
from .engine import DatasetEnsemble, open_dataset
from .layout import write_dataset

__all__ = ["DatasetEnsemble", "open_dataset", "write_chunks", "write_dataset"]

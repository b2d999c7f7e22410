"""A real-run cluster's settings (harness.py starts a cluster from them)."""

from __future__ import annotations

from typing import Any, NamedTuple


class ClusterConfig(NamedTuple):
    """A cluster's settings: the model's configuration's (model/config.py) in RocketMQ's terms."""

    brokers: int = 3
    flush: str = "SYNC_FLUSH"
    all_ack: bool = True
    in_sync_replicas: int = 1
    min_in_sync_replicas: int = 1
    async_learners: tuple[int, ...] = ()
    priorities: tuple[int, ...] = ()
    unclean: bool = False
    heartbeat_timeout: int = 2  # controller ticks
    file_size: int = 1 << 20
    cq_file_entries: int = 300  # a consume-queue file's entries (RocketMQ's default: 300,000)
    slave_timeout_ms: int = 3000
    not_catchup_ms: int = 2000
    ha_heartbeat_ms: int = 100
    ha_housekeeping_ms: int = 60_000
    ha_batch_bytes: int = 32 * 1024  # haTransferBatchSize (RocketMQ's default; replay --cluster: small)
    epoch_file_writeback: int | None = 1  # ticks before an epoch-file version survives a power loss; None: all

    @classmethod
    def from_model(cls, cfg: Any) -> "ClusterConfig":
        """The cluster for a model configuration (the fields both have; offsets are the store's)."""
        return cls(brokers=cfg.brokers, flush=cfg.flush, all_ack=cfg.all_ack, in_sync_replicas=cfg.in_sync_replicas,
                   min_in_sync_replicas=cfg.min_in_sync_replicas, async_learners=tuple(cfg.async_learners),
                   priorities=tuple(cfg.priorities), unclean=cfg.unclean)

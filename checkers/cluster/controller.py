"""The cluster's controller: RocketMQ's ReplicasInfoManager, DefaultElectPolicy and
DefaultBrokerHeartbeatManager in conformance's core driver JVM (checkers/java/driver.py), which
applies each result's events as the controller's state machine does and keeps a logical clock for
the heartbeat manager. The harness hands it the brokers' RPCs (the ones it delivers) and its own
decisions: a tick of the clock, the controller's own election trigger, a broker forgotten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqcheck.checkers.java.build import Classpath
from rmqcheck.checkers.java.driver import JavaDriver

SUCCESS = 0  # ResponseCode.SUCCESS
ELECT_MASTER_MAX_RETRY = 3  # ControllerConfig.electMasterMaxRetryCount's default

# A broker's RPC (BrokerOuterAPI stand-in, stubs-broker/) -> the driver's request.
_OPS = {"get_next_broker_id", "apply_broker_id", "register_broker", "heartbeat", "elect", "alter_sss",
        "get_replica_info"}


class Controller:
    def __init__(self, classpath: Classpath, unclean: bool, heartbeat_timeout: int, logs: Path | None = None) -> None:
        # With `logs`, RocketMQ's controller classes write controller.log there (the logging stand-in).
        flags = () if logs is None else (f"-Drmqcheck.logDir={logs}", "-Drmqcheck.logRole=controller")
        self.driver = JavaDriver(classpath, flags=flags)
        self.unclean = unclean
        self.heartbeat_timeout = heartbeat_timeout
        self.now = 0  # logical ticks
        self.last: dict[str, Any] = {}  # the controller's state after the last request

    def start(self) -> None:
        self.driver.start()
        self._ask({"op": "ctl_reset", "unclean": self.unclean, "heartbeat_timeout": self.heartbeat_timeout})

    def close(self) -> None:
        self.driver.close()

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        (answer,) = self.driver.run([{**request, "now": self.now}])
        if answer.get("state") is not None:
            self.last = answer["state"]
        return answer

    def rpc(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """A broker's request, as the controller answers it (code, remark, header, body)."""
        if op not in _OPS:
            raise ValueError(f"no controller request {op!r}")
        request = {"op": op, **args}
        if op == "apply_broker_id":  # the broker sends "address;millis", the driver puts the address back
            address, _, code = str(args["check_code"]).partition(";")
            request.update(address=address, check_code=code)
        elif op == "elect":
            request.update(designate=False)
        return self._ask(request)

    def tick(self) -> None:
        self.now += 1

    def elect(self) -> dict[str, Any]:
        """The controller's own trigger (scanNeedReelectBrokerSets found the master gone):
        ControllerManager.triggerElectMaster tries up to electMasterMaxRetryCount times, and each
        failed attempt applies an ElectMasterEvent that bumps masterEpoch (reference §7.10)."""
        for _ in range(ELECT_MASTER_MAX_RETRY):
            answer = self._ask({"op": "elect", "id": None, "designate": False})
            if answer.get("code") == SUCCESS:
                break
        return answer

    def admin_elect(self, broker_id: int) -> dict[str, Any]:
        """mqadmin electMaster designating a broker (ofAdminTrigger)."""
        return self._ask({"op": "elect", "id": broker_id, "designate": True})

    def needs_election(self) -> bool:
        return bool(self._ask({"op": "scan"})["result"])

    def expire(self, broker_id: int) -> None:
        """The heartbeat manager forgets a broker (its channel closed)."""
        self._ask({"op": "expire", "id": broker_id})

    def state(self) -> dict[str, Any]:
        """Master, epochs, SyncStateSet and broker ids, as ReplicasInfoManager holds them."""
        return self._ask({"op": "get_replica_info"})["state"]

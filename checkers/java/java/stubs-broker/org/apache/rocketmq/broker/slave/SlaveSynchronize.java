package org.apache.rocketmq.broker.slave;

import org.apache.rocketmq.broker.BrokerController;

/** rmqcheck's stand-in: a slave's metadata sync (topics, offsets) is outside what the harness checks. */
public class SlaveSynchronize {
    private volatile String masterAddr;

    public SlaveSynchronize() {
    }

    /** RocketMQ's constructor, which RocketMQ's own ReplicasManager tests call (rmqcheck findings --check). */
    public SlaveSynchronize(BrokerController brokerController) {
    }

    public void setMasterAddr(String masterAddr) {
        this.masterAddr = masterAddr;
    }

    public String getMasterAddr() {
        return masterAddr;
    }

    public void syncAll() {
    }

    public void syncTimerCheckPoint() {
    }
}

package org.apache.rocketmq.broker.slave;

/** rmqcheck's stand-in: a slave's metadata sync (topics, offsets) is outside what the harness checks. */
public class SlaveSynchronize {
    private volatile String masterAddr;

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

package org.apache.rocketmq.broker.topic;

import org.apache.rocketmq.remoting.protocol.DataVersion;

/** rmqcheck's stand-in: ReplicasManager only bumps the data version on a role change. */
public class TopicConfigManager {
    private final DataVersion dataVersion = new DataVersion();

    public DataVersion getDataVersion() {
        return dataVersion;
    }
}

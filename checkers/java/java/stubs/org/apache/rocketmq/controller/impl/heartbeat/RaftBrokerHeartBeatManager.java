// Stands in for RocketMQ's RaftBrokerHeartBeatManager, which BrokerHeartbeatManager's factory
// names and which needs the JRaft controller (sofa-jraft is not in Debian). rmqcheck drives
// DefaultBrokerHeartbeatManager, the default controller's, and never builds this one.
package org.apache.rocketmq.controller.impl.heartbeat;

import org.apache.rocketmq.common.ControllerConfig;

public class RaftBrokerHeartBeatManager extends DefaultBrokerHeartbeatManager {
    public RaftBrokerHeartBeatManager(ControllerConfig controllerConfig) {
        super(controllerConfig);
        throw new UnsupportedOperationException("the JRaft controller is not loaded by rmqcheck's driver");
    }
}

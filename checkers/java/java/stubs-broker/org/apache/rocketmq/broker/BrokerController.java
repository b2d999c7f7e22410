package org.apache.rocketmq.broker;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;
import org.apache.rocketmq.broker.out.BrokerOuterAPI;
import org.apache.rocketmq.broker.slave.SlaveSynchronize;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.BrokerIdentity;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * rmqcheck's stand-in for RocketMQ's BrokerController: only what ReplicasManager asks of it.
 * The configurations are the ones the store holds (ReplicasManager flips the role and id in
 * them); registerBrokerAll is where a real broker learns its master's HA address from the name
 * server, so it asks the harness (`onRegister`), which answers with the master's address.
 */
public class BrokerController {
    private final BrokerConfig brokerConfig;
    private final MessageStoreConfig messageStoreConfig;
    private final MessageStore messageStore;
    private final BrokerOuterAPI brokerOuterAPI;
    private final String brokerAddr;
    private final Consumer<BrokerController> onRegister;
    private final TopicConfigManager topicConfigManager = new TopicConfigManager();
    private final SlaveSynchronize slaveSynchronize = new SlaveSynchronize();
    private final ScheduledExecutorService scheduled;
    private volatile boolean isolated = true;
    private volatile boolean specialServices;

    public BrokerController(BrokerConfig brokerConfig, MessageStoreConfig messageStoreConfig, MessageStore messageStore,
        BrokerOuterAPI brokerOuterAPI, String brokerAddr, ScheduledExecutorService scheduled,
        Consumer<BrokerController> onRegister) {
        this.brokerConfig = brokerConfig;
        this.messageStoreConfig = messageStoreConfig;
        this.messageStore = messageStore;
        this.brokerOuterAPI = brokerOuterAPI;
        this.brokerAddr = brokerAddr;
        this.scheduled = scheduled;
        this.onRegister = onRegister;
    }

    public BrokerConfig getBrokerConfig() {
        return brokerConfig;
    }

    public MessageStoreConfig getMessageStoreConfig() {
        return messageStoreConfig;
    }

    public MessageStore getMessageStore() {
        return messageStore;
    }

    public BrokerOuterAPI getBrokerOuterAPI() {
        return brokerOuterAPI;
    }

    public String getBrokerAddr() {
        return brokerAddr;
    }

    public BrokerIdentity getBrokerIdentity() {
        return new BrokerIdentity(brokerConfig.getBrokerClusterName(), brokerConfig.getBrokerName(),
            brokerConfig.getBrokerId());
    }

    public TopicConfigManager getTopicConfigManager() {
        return topicConfigManager;
    }

    public SlaveSynchronize getSlaveSynchronize() {
        return slaveSynchronize;
    }

    public ScheduledExecutorService getScheduledExecutorService() {
        return scheduled;
    }

    public void setIsolated(boolean isolated) {
        this.isolated = isolated;
    }

    public boolean isIsolated() {
        return isolated;
    }

    public void changeSpecialServiceStatus(boolean shouldStart) {
        this.specialServices = shouldStart;
    }

    /** RocketMQ's ReplicasManager tests call it (on a mock); the harness stops a broker itself. */
    public void shutdown() {
    }

    public synchronized void registerBrokerAll(boolean checkOrderConfig, boolean oneway, boolean forceRegister) {
        onRegister.accept(this);
    }
}

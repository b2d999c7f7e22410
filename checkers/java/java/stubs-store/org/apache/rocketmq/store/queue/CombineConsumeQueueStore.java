// Shadow of RocketMQ's CombineConsumeQueueStore (file + RocksDB consume queues; RocksDB is not in
// Debian). Only built when rocksdbCQDoubleWriteEnable is set, which the HA checks never set.
package org.apache.rocketmq.store.queue;

import org.apache.rocketmq.store.DefaultMessageStore;

public class CombineConsumeQueueStore extends ConsumeQueueStore {
    public CombineConsumeQueueStore(DefaultMessageStore messageStore) {
        super(messageStore);
        throw new UnsupportedOperationException("RocksDB consume queues are not loaded");
    }
}

// Shadow of RocketMQ's DLedgerCommitLog (needs DLedger, not in Debian). The HA paths never use the
// DLedger commit log (enableDLegerCommitLog is false); the message store only names the class.
package org.apache.rocketmq.store.dledger;

import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.DefaultMessageStore;

public class DLedgerCommitLog extends CommitLog {
    public DLedgerCommitLog(final DefaultMessageStore defaultMessageStore) {
        super(defaultMessageStore);
        throw new UnsupportedOperationException("DLedger commit log is not loaded");
    }

    public Server getdLedgerServer() {
        throw new UnsupportedOperationException("DLedger commit log is not loaded");
    }

    public interface Server {
        Config getdLedgerConfig();
    }

    public interface Config {
        String getDataStorePath();
    }
}

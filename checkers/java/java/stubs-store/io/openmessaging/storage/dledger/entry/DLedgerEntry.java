// Stub: DefaultMessageStore reads DLedgerEntry.BODY_OFFSET only when the commit log is a DLedgerCommitLog.
package io.openmessaging.storage.dledger.entry;
public class DLedgerEntry {
    public static final int POS_OFFSET = 4 + 4 + 8 + 8;
    public static final int HEADER_SIZE = POS_OFFSET + 8 + 4 + 4 + 4;
    public static final int BODY_OFFSET = HEADER_SIZE + 4;
}

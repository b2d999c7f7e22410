// Stub: RocksDB is not in Debian; only the checked exception appears on the HA paths' signatures.
package org.rocksdb;
public class RocksDBException extends Exception {
    public RocksDBException(String msg) { super(msg); }
    public RocksDBException(String msg, Throwable cause) { super(msg, cause); }
}

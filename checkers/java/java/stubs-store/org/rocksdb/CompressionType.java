// Stub: MessageStoreConfig's field initialisers read library names.
package org.rocksdb;
public enum CompressionType {
    NO_COMPRESSION(null), SNAPPY_COMPRESSION("snappy"), ZLIB_COMPRESSION("z"), BZLIB2_COMPRESSION("bzip2"),
    LZ4_COMPRESSION("lz4"), LZ4HC_COMPRESSION("lz4hc"), XPRESS_COMPRESSION("xpress"), ZSTD_COMPRESSION("zstd");
    private final String libraryName;
    CompressionType(String libraryName) { this.libraryName = libraryName; }
    public String getLibraryName() { return libraryName; }
}

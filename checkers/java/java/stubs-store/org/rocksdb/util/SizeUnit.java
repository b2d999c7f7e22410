package org.rocksdb.util;
public class SizeUnit {
    public static final long KB = 1024L;
    public static final long MB = KB * KB;
    public static final long GB = KB * MB;
    public static final long TB = KB * GB;
    public static final long PB = KB * TB;
}

// rmqcheck's conformance driver for the broker's HA service: RocketMQ's own AutoSwitchHAService,
// AutoSwitchHAClient.doTruncate, GroupTransferService's wait for acks and CommitLog's
// confirmOffset, driven one JSON request per line
// on stdin, one JSON answer per line on stdout.
//
// The driver decides nothing: every offset, set and state comes from RocketMQ's classes. Each
// request carries the whole state the called method reads (one broker's SyncStateSets, HA
// connections and their acks, store offsets, role, epoch entries), which the driver installs in
// the service's fields before the call; what the classes would otherwise get from a running
// store comes from a Mockito DefaultMessageStore answering from that state (max offset, which
// offsets start a message), while DefaultMessageStore.truncateFiles and CommitLog's confirmOffset
// methods run as written. Sockets are not opened: a connection is only its slave id and ack (an
// AutoSwitchHAConnection made without its constructor), and the client's reports go to a mock
// channel that records them.

import static org.mockito.Mockito.any;
import static org.mockito.Mockito.anyLong;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.doCallRealMethod;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.mockito.Mockito.withSettings;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageStatus;
import org.apache.rocketmq.store.RunningFlags;
import org.apache.rocketmq.store.StoreCheckpoint;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.ha.DefaultHAService;
import org.apache.rocketmq.store.ha.GroupTransferService;
import org.apache.rocketmq.store.ha.HAConnection;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAClient;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAConnection;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAService;
import org.apache.rocketmq.store.ha.autoswitch.EpochFileCache;
import org.objenesis.ObjenesisStd;

public final class RmqcheckHaDriver implements Wire.Driver {
    // One logical tick of the model is this many milliseconds (as in RmqcheckDriver).
    private static final long TICK = 1_000_000L;

    private final MessageStoreConfig storeConfig = new MessageStoreConfig();
    private final RunningFlags runningFlags = new RunningFlags();
    private final AtomicLong maxPhy = new AtomicLong();
    private final Set<Long> messageStarts = new HashSet<>(); // isOffsetAligned: a message starts there
    private final List<Long> truncatedAt = new ArrayList<>(); // truncateDirtyFiles calls
    private final List<Long> reported = new ArrayList<>(); // offsets the client wrote to its channel
    // stub-only: a mock that remembered its invocations would grow with every request
    private final DefaultMessageStore store = mock(DefaultMessageStore.class, withSettings().stubOnly());
    private int listReads; // getConnectionList calls: how the driver knows a wait was evaluated
    private final AutoSwitchHAService service = new AutoSwitchHAService() {
        @Override
        public List<HAConnection> getConnectionList() {
            listReads++;
            return super.getConnectionList();
        }
    };
    private final ObjenesisStd objenesis = new ObjenesisStd();
    private final AutoSwitchHAClient client;
    private final EpochFileCache clientCache;

    // The private fields a request installs; resolved once, so an older or newer RocketMQ fails
    // with the name of what it lacks.
    private final Field syncStateSet = field(AutoSwitchHAService.class, "syncStateSet");
    private final Field remoteSyncStateSet = field(AutoSwitchHAService.class, "remoteSyncStateSet");
    private final Field synchronizing = field(AutoSwitchHAService.class, "isSynchronizingSyncStateSet");
    private final Field caughtUp = field(AutoSwitchHAService.class, "connectionCaughtUpTimeTable");
    private final Field serviceCache = field(AutoSwitchHAService.class, "epochCache");
    private final Field connections = field(DefaultHAService.class, "connectionList");
    private final Field slaveId = field(AutoSwitchHAConnection.class, "slaveId");
    private final Field slaveAck = field(AutoSwitchHAConnection.class, "slaveAckOffset");
    private final Field reportedOffset = field(AutoSwitchHAClient.class, "currentReportedOffset");
    private final Field confirmOffset = field(CommitLog.class, "confirmOffset");
    private final Field clientChannel = field(AutoSwitchHAClient.class, "socketChannel");
    private final Method doTruncate = method(AutoSwitchHAClient.class, "doTruncate", List.class, long.class);
    private final Method swapRequests = method(GroupTransferService.class, "swapRequests");
    private final Method doWaitTransfer = method(GroupTransferService.class, "doWaitTransfer");

    private RmqcheckHaDriver(Path dir) throws Exception {
        storeConfig.setStorePathRootDir(dir.toString());
        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setEnableControllerMode(true);
        when(store.getMessageStoreConfig()).thenReturn(storeConfig);
        when(store.getBrokerConfig()).thenReturn(brokerConfig);
        when(store.getMaxPhyOffset()).thenAnswer(i -> maxPhy.get());
        when(store.getRunningFlags()).thenReturn(runningFlags);
        when(store.getStoreCheckpoint()).thenReturn(mock(StoreCheckpoint.class, withSettings().stubOnly()));
        when(store.getHaService()).thenReturn(service);
        CommitLog commitLog = new CommitLog(store); // real: the confirmOffset methods live here
        field(DefaultMessageStore.class, "commitLog").set(store, commitLog);
        when(store.getCommitLog()).thenReturn(commitLog);
        when(store.getConfirmOffset()).thenCallRealMethod();
        when(store.getConfirmOffsetDirectly()).thenCallRealMethod();
        doCallRealMethod().when(store).setConfirmOffset(anyLong());
        doCallRealMethod().when(store).truncateFiles(anyLong());
        when(store.isOffsetAligned(anyLong())).thenAnswer(i -> messageStarts.contains((Long) i.getArgument(0)));
        doAnswer(i -> {
            long offset = i.getArgument(0);
            truncatedAt.add(offset);
            maxPhy.set(Math.min(maxPhy.get(), offset));
            return null;
        }).when(store).truncateDirtyFiles(anyLong());
        service.init(store);
        clientCache = new EpochFileCache(dir.resolve("client-epochFileCheckpoint").toString());
        client = new AutoSwitchHAClient(service, store, clientCache, 0L);
        SocketChannel channel = mock(SocketChannel.class, withSettings().stubOnly());
        when(channel.write(any(ByteBuffer.class))).thenAnswer(i -> {
            ByteBuffer b = i.getArgument(0);
            int n = b.remaining();
            reported.add(b.getLong(b.position() + 4)); // header: state (int), offset (long)
            b.position(b.limit());
            return n;
        });
        clientChannel.set(client, channel);
    }

    private static Field field(Class<?> owner, String name) {
        try {
            Field f = owner.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException("RocketMQ's " + owner.getSimpleName() + " has no field " + name
                + ": this RocketMQ is older or newer than the ones conformance supports");
        }
    }

    private static Method method(Class<?> owner, String name, Class<?>... args) {
        try {
            Method m = owner.getDeclaredMethod(name, args);
            m.setAccessible(true);
            return m;
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException("RocketMQ's " + owner.getSimpleName() + " has no method " + name
                + ": this RocketMQ is older or newer than the ones conformance supports");
        }
    }

    public static void main(String[] args) throws Exception {
        Wire.serve(args, "rmqcheck-ha", RmqcheckHaDriver::new);
    }

    @Override
    public Map<String, Object> answer(String op, Map<String, Object> req) throws Exception {
        install(req);
        Map<String, Object> m = Wire.ok();
        return call(op, req, m) ? m : null;
    }

    // --- the broker's state, installed in the service's fields -------------------------------------

    private static BrokerRole role(String name) {
        switch (name) {
            case "MASTER":
                return BrokerRole.SYNC_MASTER; // controller mode makes every master SYNC_MASTER
            case "SLAVE":
                return BrokerRole.SLAVE;
            default:
                return new MessageStoreConfig().getBrokerRole(); // before a role: the configured default
        }
    }

    private static List<EpochEntry> entries(Map<String, Object> req) {
        List<EpochEntry> out = new ArrayList<>();
        for (Object o : Json.list(req, "epochs")) {
            List<?> pair = (List<?>) o;
            out.add(new EpochEntry(((Number) pair.get(0)).intValue(), ((Number) pair.get(1)).longValue()));
        }
        if (!out.isEmpty()) {
            out.get(out.size() - 1).setEndOffset(Json.longOf(req, "last_end")); // a stale end (quirk Q1) included
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private void install(Map<String, Object> req) throws Exception {
        storeConfig.setBrokerRole(role(Json.string(req, "role")));
        storeConfig.setAllAckInSyncStateSet(Json.bool(req, "all_ack"));
        storeConfig.setHaMaxTimeSlaveNotCatchup(Json.longOf(req, "not_catchup") * TICK);
        runningFlags.makeFenced(Json.bool(req, "fenced"));
        maxPhy.set(Json.longOf(req, "max"));
        messageStarts.clear();
        messageStarts.addAll(Json.longs(req, "message_starts"));
        truncatedAt.clear();
        reported.clear();
        store.getCommitLog().setConfirmOffset(Json.longOf(req, "confirm"));
        service.setLocalBrokerId(Json.longOf(req, "id"));
        Set<Long> local = (Set<Long>) syncStateSet.get(service);
        local.clear();
        local.addAll(Json.longs(req, "sss"));
        Set<Long> remote = (Set<Long>) remoteSyncStateSet.get(service);
        remote.clear();
        remote.addAll(Json.longs(req, "remote"));
        synchronizing.set(service, Json.bool(req, "synchronizing"));
        List<HAConnection> conns = (List<HAConnection>) connections.get(service);
        conns.clear();
        for (Object o : Json.list(req, "conns")) {
            List<?> c = (List<?>) o;
            conns.add(connection(((Number) c.get(0)).longValue(), ((Number) c.get(1)).longValue()));
        }
        // caught-up times in ticks; "now - t > timeout" holds exactly when the Java's does
        long wall = System.currentTimeMillis();
        long now = Json.longOf(req, "now");
        Map<Long, Long> caught = (Map<Long, Long>) caughtUp.get(service);
        caught.clear();
        for (Object o : Json.list(req, "caught_up")) {
            List<?> c = (List<?>) o;
            caught.put(((Number) c.get(0)).longValue(), wall - (now - ((Number) c.get(1)).longValue()) * TICK + TICK / 2);
        }
        EpochFileCache cache = new EpochFileCache();
        cache.initCacheFromEntries(entries(req));
        serviceCache.set(service, cache);
    }

    /** A connection of a slave with its ack, made without its constructor: no socket is opened. */
    private AutoSwitchHAConnection connection(long slave, long ack) throws Exception {
        AutoSwitchHAConnection conn = objenesis.newInstance(AutoSwitchHAConnection.class);
        slaveId.set(conn, slave);
        slaveAck.set(conn, ack);
        return conn;
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> sets() throws Exception {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sss", new TreeSet<>((Set<Long>) syncStateSet.get(service)));
        m.put("remote", new TreeSet<>((Set<Long>) remoteSyncStateSet.get(service)));
        m.put("synchronizing", service.isSynchronizingSyncStateSet());
        m.put("confirm", confirmOffset.get(store.getCommitLog())); // the stored value
        return m;
    }

    // --- the calls ---------------------------------------------------------------------------------

    /**
     * doWaitTransfer for one put with a 1 ms deadline: the installed state does not change while it
     * waits, so its first evaluation decides. A put that was not acknowledged is answered only if
     * an evaluation read the connection list (a thread descheduled past the deadline ends the wait
     * unevaluated): otherwise the wait is run again.
     */
    private boolean waitTransfer(long nextOffset, int ackNums) throws Exception {
        for (int attempt = 0; attempt < 1000; attempt++) {
            GroupTransferService waiter = new GroupTransferService(service, store);
            CommitLog.GroupCommitRequest put = new CommitLog.GroupCommitRequest(nextOffset, 1, ackNums);
            int reads = listReads;
            waiter.putRequest(put);
            swapRequests.invoke(waiter);
            doWaitTransfer.invoke(waiter);
            if (put.future().get() == PutMessageStatus.PUT_OK) {
                return true;
            }
            if (listReads > reads) {
                return false;
            }
        }
        throw new IllegalStateException("GroupTransferService never evaluated a wait in 1000 attempts");
    }

    @SuppressWarnings("unchecked")
    private boolean call(String op, Map<String, Object> req, Map<String, Object> m) throws Exception {
        switch (op) {
            case "ha_confirm": // the readers of confirmOffset; getConfirmOffset last, as it may store a value
                m.put("compute", service.computeConfirmOffset());
                m.put("directly", store.getConfirmOffsetDirectly());
                m.put("in_sync", service.inSyncReplicasNums(maxPhy.get()));
                m.put("get", store.getConfirmOffset());
                return true;
            case "ha_ack":
                service.updateConfirmOffsetWhenSlaveAck(Json.longOf(req, "slave"));
                m.putAll(sets());
                return true;
            case "ha_expand":
                service.maybeExpandInSyncStateSet(Json.longOf(req, "slave"), Json.longOf(req, "offset"));
                m.putAll(sets());
                return true;
            case "ha_shrink":
                m.put("result", new TreeSet<>(service.maybeShrinkSyncStateSet()));
                m.putAll(sets());
                return true;
            case "ha_set_sss":
                service.setSyncStateSet(new HashSet<>(Json.longs(req, "new_sss")));
                m.putAll(sets());
                return true;
            case "ha_remove": { // a closed connection's service ends: the installed one at "conn", or (-1) one already removed
                int at = (int) Json.longOf(req, "conn");
                List<HAConnection> conns = (List<HAConnection>) connections.get(service);
                HAConnection conn = at >= 0 ? conns.get(at) : connection(Json.longOf(req, "slave"), 0);
                service.removeConnection(conn);
                m.putAll(sets());
                List<Object> left = new ArrayList<>();
                for (HAConnection c : conns) {
                    left.add(List.of(((AutoSwitchHAConnection) c).getSlaveId(), c.getSlaveAckOffset()));
                }
                m.put("conns", left);
                return true;
            }
            case "ha_wait": // GroupTransferService.doWaitTransfer for one request against the installed connections
                m.put("result", waitTransfer(Json.longOf(req, "next_offset"), (int) Json.longOf(req, "need_ack")));
                return true;
            case "ha_truncate":
                clientCache.initCacheFromEntries(entries(req));
                reportedOffset.set(client, Json.longOf(req, "reported"));
                List<EpochEntry> master = new ArrayList<>();
                for (Object o : Json.list(req, "master")) {
                    List<?> pair = (List<?>) o;
                    master.add(new EpochEntry(((Number) pair.get(0)).intValue(), ((Number) pair.get(1)).longValue()));
                }
                boolean ok = (Boolean) doTruncate.invoke(client, master, Json.longOf(req, "master_max"));
                m.put("result", ok);
                m.put("truncated_at", new ArrayList<>(truncatedAt));
                m.put("max", maxPhy.get());
                m.put("reported", reportedOffset.get(client));
                m.put("sent", new ArrayList<>(reported));
                List<Object> left = new ArrayList<>();
                for (EpochEntry e : clientCache.getAllEntries()) {
                    left.add(List.of(e.getEpoch(), e.getStartOffset()));
                }
                m.put("epochs", left);
                return true;
            default:
                return false;
        }
    }
}

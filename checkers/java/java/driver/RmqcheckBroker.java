// rmqcheck's broker node: one broker of a real-run cluster (cluster/ in rmqcheck). In this JVM:
// RocketMQ's DefaultMessageStore on real files, its AutoSwitchHAService (and AutoSwitchHAClient
// when a slave) on loopback sockets, and its broker's ReplicasManager over the stand-ins of
// stubs-broker/ (BrokerController, BrokerOuterAPI).
//
// Python decides everything that is not RocketMQ's own code:
// - every controller RPC ReplicasManager makes leaves as {"rpc": k, "op": ..., "args": {...}} on
//   stdout and waits for {"rpc_reply": k, "answer": {...} | null} on stdin (null: not delivered);
// - ReplicasManager's periodic tasks and one-shot jobs run only when a "task" command says so
//   (its executors are replaced by ManualExecutors before it starts);
// - puts, reads, heartbeats, crashes and clean shutdowns are commands.
//
// Commands ({"id": n, "op": ...}) run one at a time on a command thread and are answered with
// {"reply": n, "ok": true, ...}; a put is answered when it is appended and its outcome comes
// later as {"event": "put", ...}. "state" and "ping" are answered at once by the reader thread,
// whatever the command thread is doing: a read-only look at the store, the HA service and
// ReplicasManager.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.controller.ReplicasManager;
import org.apache.rocketmq.broker.out.BrokerOuterAPI;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageVersion;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAService;
import org.apache.rocketmq.store.MappedFileQueue;
import org.apache.rocketmq.store.MessageExtEncoder;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;

public final class RmqcheckBroker {
    static final String CLUSTER = "cluster";
    static final String BROKER = "broker-a";
    static final String TOPIC = "rmqcheck";
    static final String GROUP = "rmqcheck-consumer";
    // ReplicasManager's periods, made distinct so that each names its task (ManualExecutor).
    static final Map<String, Long> TASKS = Map.of(
        "sync_replica_info", 5_001L,       // syncBrokerMetadataPeriod: getReplicaInfo, then follow it
        "check_sss", 5_002L,               // checkSyncStateSetPeriod: maybeShrinkSyncStateSet + alter
        "sync_controller_metadata", 10_003L,
        "scan_controllers", 3_000L,
        "update_controller_address", 120_000L);

    // An RPC the harness never answers is a lost one after this long (the harness answers at once
    // or drops; this only keeps a thread from waiting for ever when the harness is gone).
    static final long RPC_TIMEOUT_SECONDS = 300;

    private final BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    private final ExecutorService commands = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "rmqcheck-command");
        t.setDaemon(true);
        return t;
    });
    private final Map<Long, CompletableFuture<Map<String, Object>>> rpcs = new ConcurrentHashMap<>();
    private final AtomicLong rpcIds = new AtomicLong();
    private final AtomicLong putIds = new AtomicLong();
    private final AtomicInteger putsPending = new AtomicInteger();
    private volatile boolean busy;

    private BrokerConfig brokerConfig;
    private MessageStoreConfig storeConfig;
    private DefaultMessageStore store;
    private ReplicasManager replicas;
    private ManualExecutor scheduled;
    private volatile ManualExecutor oneShots;
    private String address;

    public static void main(String[] args) throws Exception {
        new RmqcheckBroker().serve();
    }

    private void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> msg;
            try {
                msg = Json.object(line);
            } catch (RuntimeException e) { // the harness wrote what it should not: say so, and go on reading
                Map<String, Object> m = Wire.ok();
                m.put("ok", false);
                m.put("event", "bad_input");
                m.put("error", e.getMessage());
                send(m);
                continue;
            }
            if (msg.containsKey("rpc_reply")) {
                CompletableFuture<Map<String, Object>> f = rpcs.remove(Json.longOf(msg, "rpc_reply"));
                if (f != null) {
                    @SuppressWarnings("unchecked")
                    Map<String, Object> answer = (Map<String, Object>) msg.get("answer");
                    f.complete(answer);
                }
                continue;
            }
            long id = msg.get("id") instanceof Number ? ((Number) msg.get("id")).longValue() : -1;
            String op = String.valueOf(msg.get("op"));
            if ("state".equals(op) || "ping".equals(op)) {
                reply(id, () -> "ping".equals(op) ? Wire.ok() : state(Boolean.TRUE.equals(msg.get("messages"))));
            } else {
                commands.submit(() -> {
                    busy = true;
                    try {
                        reply(id, () -> command(op, msg));
                    } finally {
                        busy = false;
                    }
                });
            }
        }
        Runtime.getRuntime().halt(0); // the harness closed our stdin: RocketMQ's threads are not daemons
    }

    interface Answer {
        Map<String, Object> get() throws Throwable;
    }

    private void reply(long id, Answer answer) {
        Map<String, Object> m;
        try {
            m = answer.get();
            if (m == null) {
                m = Wire.ok();
            }
        } catch (Throwable t) {
            m = new LinkedHashMap<>();
            m.put("ok", false);
            m.put("exception", t.getClass().getName() + ": " + t.getMessage());
        }
        m.put("reply", id);
        send(m);
    }

    private void send(Map<String, Object> m) {
        String text = Json.write(m);
        synchronized (out) {
            try {
                out.write(text);
                out.write('\n');
                out.flush();
            } catch (java.io.IOException e) {
                Runtime.getRuntime().halt(3); // the harness is gone
            }
        }
    }

    /** An RPC to the harness, from whatever thread ReplicasManager or the HA service runs on. */
    private Map<String, Object> rpc(String op, Map<String, Object> args) throws InterruptedException {
        long k = rpcIds.incrementAndGet();
        CompletableFuture<Map<String, Object>> f = new CompletableFuture<>();
        rpcs.put(k, f);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("rpc", k);
        m.put("op", op);
        m.put("args", args);
        send(m);
        try {
            return f.get(RPC_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } catch (java.util.concurrent.TimeoutException e) { // as a lost RPC: the stand-in throws a broken link
            rpcs.remove(k);
            return null;
        }
    }

    // --- commands ------------------------------------------------------------------------------

    private Map<String, Object> command(String op, Map<String, Object> req) throws Throwable {
        switch (op) {
            case "start":
                return start(req);
            case "put":
                return put(req);
            case "puts": // a burst: each put as "put" does, one line for them all
                for (Object one : Json.list(req, "puts")) {
                    if (!(one instanceof Map)) {
                        throw new Json.BadRequest("puts: each put is an object with msg and queue");
                    }
                    @SuppressWarnings("unchecked")
                    Map<String, Object> put = (Map<String, Object>) one;
                    put(put);
                }
                return null;
            case "read":
                return read(req);
            case "task":
                return task(Json.string(req, "name"));
            case "heartbeat":
                replicas.sendHeartbeatToController();
                return null;
            case "halt":
                return halt(Json.longOf(req, "id"), Json.bool(req, "power_loss"));
            case "shutdown":
                replicas.shutdown();
                store.shutdown();
                send(reply(Json.longOf(req, "id")));
                Runtime.getRuntime().halt(0);
                return null;
            default:
                throw new Json.BadRequest("unknown op " + op);
        }
    }

    private static Map<String, Object> reply(long id) {
        Map<String, Object> m = Wire.ok();
        m.put("reply", id);
        return m;
    }

    private Map<String, Object> start(Map<String, Object> req) throws Exception {
        String dir = Json.string(req, "dir");
        long number = Json.longOf(req, "broker");
        address = "127.0.0.1:" + (30000 + number); // a name only: brokers are reached through the harness
        brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerClusterName(CLUSTER);
        brokerConfig.setBrokerName(BROKER);
        brokerConfig.setEnableControllerMode(true);
        brokerConfig.setControllerAddr(BrokerOuterAPI.CONTROLLER);
        brokerConfig.setSyncBrokerMetadataPeriod(TASKS.get("sync_replica_info"));
        brokerConfig.setCheckSyncStateSetPeriod(TASKS.get("check_sss"));
        brokerConfig.setSyncControllerMetadataPeriod(TASKS.get("sync_controller_metadata"));
        brokerConfig.setBrokerElectionPriority((int) Json.longOf(req, "priority"));
        storeConfig = new MessageStoreConfig();
        storeConfig.setStorePathRootDir(dir);
        storeConfig.setStorePathCommitLog(dir + File.separator + "commitlog");
        storeConfig.setStorePathEpochFile(dir + File.separator + "epochFileCheckpoint");
        storeConfig.setStorePathBrokerIdentity(dir + File.separator + "brokerIdentity");
        storeConfig.setMappedFileSizeCommitLog((int) Json.longOf(req, "file_size"));
        storeConfig.setMappedFileSizeConsumeQueue((int) Json.longOf(req, "cq_file_entries") * 20);
        storeConfig.setMaxHashSlotNum(1000);
        storeConfig.setMaxIndexNum(4000);
        storeConfig.setEnableCompaction(false); // reopening reads its JSON, which the fastjson stub cannot
        storeConfig.setDiskFallRecorded(false); // no BrokerStatsManager
        storeConfig.setFlushDiskType("SYNC_FLUSH".equals(Json.string(req, "flush")) ? FlushDiskType.SYNC_FLUSH
            : FlushDiskType.ASYNC_FLUSH);
        storeConfig.setAllAckInSyncStateSet(Json.bool(req, "all_ack"));
        storeConfig.setInSyncReplicas((int) Json.longOf(req, "in_sync_replicas"));
        storeConfig.setMinInSyncReplicas((int) Json.longOf(req, "min_in_sync_replicas"));
        storeConfig.setAsyncLearner(Json.bool(req, "async_learner"));
        storeConfig.setTotalReplicas((int) Json.longOf(req, "brokers"));
        storeConfig.setHaListenPort((int) Json.longOf(req, "ha_port"));
        storeConfig.setHaSendHeartbeatInterval((int) Json.longOf(req, "ha_heartbeat_ms"));
        storeConfig.setHaHousekeepingInterval((int) Json.longOf(req, "ha_housekeeping_ms"));
        storeConfig.setHaTransferBatchSize((int) Json.longOf(req, "ha_batch_bytes"));
        storeConfig.setHaMaxTimeSlaveNotCatchup(Json.longOf(req, "not_catchup_ms"));
        storeConfig.setSlaveTimeout((int) Json.longOf(req, "slave_timeout_ms"));
        storeConfig.setBrokerRole(BrokerRole.SLAVE); // ReplicasManager sets the role the controller gives

        store = new DefaultMessageStore(storeConfig, null, null, brokerConfig, new ConcurrentHashMap<>());
        BrokerOuterAPI api = new BrokerOuterAPI(this::rpc);
        BrokerController controller = new BrokerController(brokerConfig, storeConfig, store, api, address,
            Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "rmqcheck-unused");
                t.setDaemon(true);
                return t;
            }), this::registerToNameServer);
        store.getRunningFlags().makeFenced(true);
        if (!store.load()) {
            throw new IllegalStateException("the store did not load from " + dir);
        }
        store.start();
        replicas = new ReplicasManager(controller);
        scheduled = new ManualExecutor(false);
        oneShots = new ManualExecutor(false);
        replace(replicas, "scheduledService", scheduled);
        replace(replicas, "executorService", oneShots);
        replace(replicas, "scanExecutor", new ManualExecutor(true));
        replicas.start();
        Map<String, Object> m = Wire.ok();
        m.put("ha_port", storeConfig.getHaListenPort());
        m.put("address", address);
        return m;
    }

    private static void replace(Object owner, String name, Object value) throws ReflectiveOperationException {
        Field f = owner.getClass().getDeclaredField(name);
        f.setAccessible(true);
        f.set(owner, value);
    }

    /** registerBrokerAll: where a slave learns its master's HA address (from the harness). */
    private void registerToNameServer(BrokerController controller) {
        try {
            Map<String, Object> answer = rpc("name_server", new LinkedHashMap<>());
            if (answer != null && answer.get("ha_address") != null
                && storeConfig.getBrokerRole() == BrokerRole.SLAVE) {
                store.updateHaMasterAddress(String.valueOf(answer.get("ha_address")));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private Map<String, Object> put(Map<String, Object> req) {
        long put = putIds.incrementAndGet();
        String msg = Json.string(req, "msg");
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(TOPIC);
        m.setKeys(msg); // the message's name: its body may be padded
        m.setBody(padded(msg, req.get("size") instanceof Number ? ((Number) req.get("size")).intValue() : 0));
        m.setQueueId((int) Json.longOf(req, "queue"));
        m.setSysFlag(0);
        m.setBornTimestamp(System.currentTimeMillis());
        m.setStoreHost(new InetSocketAddress("127.0.0.1", 30000));
        m.setBornHost(new InetSocketAddress("127.0.0.1", 40000));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        putsPending.incrementAndGet();
        store.asyncPutMessage(m).whenComplete((result, error) -> {
            putsPending.decrementAndGet();
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", "put");
            e.put("put", put);
            e.put("msg", msg);
            if (error != null) {
                e.put("status", "EXCEPTION");
                e.put("error", error.toString());
            } else {
                e.put("status", result.getPutMessageStatus().name());
                if (result.getAppendMessageResult() != null) {
                    e.put("offset", result.getAppendMessageResult().getWroteOffset());
                    e.put("queue_offset", result.getAppendMessageResult().getLogicsOffset());
                }
            }
            send(e);
        });
        Map<String, Object> r = Wire.ok();
        r.put("put", put);
        return r;
    }

    private Map<String, Object> read(Map<String, Object> req) {
        GetMessageResult got = store.getMessage(GROUP, TOPIC, (int) Json.longOf(req, "queue"), Json.longOf(req, "offset"),
            (int) Json.longOf(req, "max"), null);
        Map<String, Object> r = Wire.ok();
        if (got == null) {
            r.put("status", "NOT_READABLE");
            r.put("messages", List.of());
            return r;
        }
        try {
            r.put("status", got.getStatus().name());
            r.put("next", got.getNextBeginOffset());
            List<Object> messages = new ArrayList<>();
            List<Long> queueOffsets = got.getMessageQueueOffset();
            for (int i = 0; i < got.getMessageBufferList().size(); i++) {
                MessageExt ext = MessageDecoder.decode(got.getMessageBufferList().get(i), true, false);
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("msg", ext == null ? null : name(ext)); // null: the bytes served are not a message
                one.put("queue_offset", i < queueOffsets.size() ? queueOffsets.get(i) : ext == null ? null : ext.getQueueOffset());
                one.put("offset", ext == null ? null : ext.getCommitLogOffset());
                messages.add(one);
            }
            r.put("messages", messages);
        } finally {
            got.release();
        }
        return r;
    }

    private Map<String, Object> task(String name) throws ReflectiveOperationException {
        Map<String, Object> r = Wire.ok();
        if ("one_shots".equals(name)) {
            r.put("ran", oneShots.runOneShots());
            return r;
        }
        if ("retry_start".equals(name)) {
            // ReplicasManager.start() queues a retry loop (sleep 5 s, startBasicService, until it
            // succeeds) when its first start fails: run one try of it instead, when the harness says.
            oneShots.shutdownNow();
            oneShots = new ManualExecutor(false);
            replace(replicas, "executorService", oneShots);
            java.lang.reflect.Method start = ReplicasManager.class.getDeclaredMethod("startBasicService");
            start.setAccessible(true);
            r.put("ran", Boolean.TRUE.equals(start.invoke(replicas)) ? 1 : 0);
            return r;
        }
        Long period = TASKS.get(name);
        if (period == null) {
            throw new Json.BadRequest("unknown task " + name + "; known: " + new TreeSet<>(TASKS.keySet()) + ", one_shots");
        }
        r.put("ran", scheduled.runPeriodic(period));
        return r;
    }

    /**
     * Die now. With `powerLoss`, first say how far each file was flushed (the harness then drops
     * what was not), holding the output so that nothing else (an ack, a put's outcome) gets out.
     */
    private Map<String, Object> halt(long id, boolean powerLoss) throws Exception {
        synchronized (out) {
            if (powerLoss) {
                Map<String, Object> m = reply(id);
                m.put("flushed", flushed());
                out.write(Json.write(m));
                out.write('\n');
                out.flush();
            }
            Runtime.getRuntime().halt(137);
        }
        return null;
    }

    /** Each mapped file of the commit log and consume queues: its name and its flushed bytes. */
    private Map<String, Object> flushed() throws ReflectiveOperationException {
        Map<String, Object> m = new LinkedHashMap<>();
        List<MappedFileQueue> queues = new ArrayList<>();
        queues.add(store.getCommitLog().getMappedFileQueue());
        Field files = org.apache.rocketmq.store.ConsumeQueue.class.getDeclaredField("mappedFileQueue");
        files.setAccessible(true); // ConsumeQueue keeps its files to itself
        for (Map<Integer, ConsumeQueueInterface> byQueue : store.getQueueStore().getConsumeQueueTable().values()) {
            for (ConsumeQueueInterface cq : byQueue.values()) {
                if (cq instanceof org.apache.rocketmq.store.ConsumeQueue) {
                    queues.add((MappedFileQueue) files.get(cq));
                }
            }
        }
        for (MappedFileQueue q : queues) {
            for (MappedFile f : q.getMappedFiles()) {
                m.put(f.getFileName(), (long) f.getFlushedPosition());
            }
        }
        return m;
    }

    // --- observation ---------------------------------------------------------------------------

    /** The broker's state; read again when a set the store's threads change moved under the copy
     * (the HA service hands out its SyncStateSets without a copy: a HashSet copied while another
     * thread removes from it throws ConcurrentModificationException or, between hasNext and next,
     * NoSuchElementException). */
    private Map<String, Object> state(boolean withMessages) {
        for (int attempt = 1; ; attempt++) {
            try {
                return stateOnce(withMessages);
            } catch (java.util.ConcurrentModificationException | java.util.NoSuchElementException e) {
                if (attempt == 5) {
                    throw e;
                }
            }
        }
    }

    private Map<String, Object> stateOnce(boolean withMessages) {
        Map<String, Object> m = Wire.ok();
        m.put("busy", busy);
        m.put("rpcs_waiting", rpcs.size());
        m.put("puts_pending", putsPending.get());
        if (store == null || replicas == null) {
            m.put("started", false);
            return m;
        }
        m.put("started", true);
        AutoSwitchHAService ha = (AutoSwitchHAService) store.getHaService();
        m.put("role", storeConfig.getBrokerRole().name());
        m.put("broker_id", replicas.getBrokerControllerId());
        m.put("master_epoch", replicas.getMasterEpoch());
        m.put("rm_sss", new TreeSet<Long>(replicas.getSyncStateSet().getSyncStateSet()));
        m.put("rm_sss_epoch", replicas.getSyncStateSet().getSyncStateSetEpoch());
        m.put("rm_state", String.valueOf(replicas.getState()));
        m.put("fenced", !store.getRunningFlags().isWriteable());
        m.put("min_offset", store.getMinPhyOffset());
        m.put("max_offset", store.getMaxPhyOffset());
        m.put("confirm_offset", store.getConfirmOffset());
        m.put("flushed_offset", store.getFlushedWhere());
        m.put("dispatch_behind", store.dispatchBehindBytes());
        m.put("reput_stopping", reputStopping());
        List<Object> epochs = new ArrayList<>();
        for (EpochEntry e : ha.getEpochEntries()) {
            epochs.add(List.of(e.getEpoch(), e.getStartOffset(), e.getEndOffset()));
        }
        m.put("epochs", epochs);
        m.put("local_sss", new TreeSet<>(ha.getLocalSyncStateSet()));
        m.put("sss", new TreeSet<>(ha.getSyncStateSet()));
        m.put("synchronizing", ha.isSynchronizingSyncStateSet());
        m.put("in_sync", ha.inSyncReplicasNums(store.getMaxPhyOffset()));
        List<Object> conns = new ArrayList<>();
        ha.getConnectionList().forEach(c -> conns.add(List.of(
            String.valueOf(((org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAConnection) c).getSlaveId()),
            c.getSlaveAckOffset(), c.getCurrentState().name())));
        m.put("connections", conns);
        m.put("client", ha.getHAClient() == null ? null : ha.getHAClient().getCurrentState().name());
        m.put("one_shots_pending", oneShots.pendingOneShots());
        if (withMessages) {
            try {
                m.put("messages", messages());
            } catch (RuntimeException e) { // the log changed under the scan (a truncation): ask again
                m.put("messages", null);
            }
        }
        return m;
    }

    /** Whether the store's ReputMessageService was told to stop and its thread still runs: a
     * truncation waits for it (ServiceThread.shutdown joins up to 90 s), and one that spins in
     * doReput (apache/rocketmq#9811) is never stopped. */
    private boolean reputStopping() {
        try {
            Field f = DefaultMessageStore.class.getDeclaredField("reputMessageService");
            f.setAccessible(true);
            org.apache.rocketmq.common.ServiceThread reput = (org.apache.rocketmq.common.ServiceThread) f.get(store);
            Field t = org.apache.rocketmq.common.ServiceThread.class.getDeclaredField("thread");
            t.setAccessible(true);
            Thread thread = (Thread) t.get(reput);
            return reput.isStopped() && thread != null && thread.isAlive();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The body of message `msg` padded so that the stored message takes `size` bytes (replay
     * --cluster: the model's message sizes, scaled), or `msg` alone when it is that long already. */
    private static byte[] padded(String msg, int size) {
        byte[] name = msg.getBytes(StandardCharsets.UTF_8);
        String props = MessageDecoder.messageProperties2String(java.util.Map.of("KEYS", msg));
        int natural = MessageExtEncoder.calMsgLength(MessageVersion.MESSAGE_VERSION_V1, 0, name.length,
            TOPIC.getBytes(StandardCharsets.UTF_8).length, props.getBytes(StandardCharsets.UTF_8).length);
        byte[] body = java.util.Arrays.copyOf(name, name.length + Math.max(0, size - natural));
        java.util.Arrays.fill(body, name.length, body.length, (byte) '.');
        return body;
    }

    /** The message's name (its keys; older stores: its body). */
    private static String name(MessageExt ext) {
        return ext.getKeys() != null ? ext.getKeys() : new String(ext.getBody(), StandardCharsets.UTF_8);
    }

    /** Every message the commit log holds, in order: [offset, size, name]. */
    private List<Object> messages() {
        List<Object> out = new ArrayList<>();
        long offset = store.getMinPhyOffset();
        long max = store.getMaxPhyOffset();
        while (offset < max) {
            MessageExt ext = store.lookMessageByOffset(offset);
            if (ext == null || ext.getStoreSize() <= 0) {
                // a blank at the end of a file: the next message starts the next file
                long size = storeConfig.getMappedFileSizeCommitLog();
                offset = (offset / size + 1) * size;
                continue;
            }
            out.add(List.of(offset, ext.getStoreSize(), name(ext)));
            offset += ext.getStoreSize();
        }
        return out;
    }
}

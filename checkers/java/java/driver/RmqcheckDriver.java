// rmqcheck's conformance driver: RocketMQ's own controller, election policy and epoch cache,
// driven one JSON request per line on stdin, one JSON answer per line on stdout.
//
// The driver decides nothing: every code, epoch, set and offset comes from RocketMQ's classes.
// It only plays the parts around them that a running controller or broker plays: it applies each
// ControllerResult's events as the controller's state machine does (even for a failed request,
// as electMaster's "no master" event needs), keeps a logical clock for the heartbeat manager, and
// mirrors AutoSwitchHAClient.doTruncate when asked for a truncation point.
//
// Protocol (checkers/java/driver.py, checkers/java/model_side.py): see the README there.

import com.alibaba.fastjson.JSON;
import io.netty.channel.Channel;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.common.ControllerConfig;
import org.apache.rocketmq.controller.elect.impl.DefaultElectPolicy;
import org.apache.rocketmq.controller.impl.event.AlterSyncStateSetEvent;
import org.apache.rocketmq.controller.impl.event.ApplyBrokerIdEvent;
import org.apache.rocketmq.controller.impl.event.CleanBrokerDataEvent;
import org.apache.rocketmq.controller.impl.event.ControllerResult;
import org.apache.rocketmq.controller.impl.event.ElectMasterEvent;
import org.apache.rocketmq.controller.impl.event.EventMessage;
import org.apache.rocketmq.controller.impl.event.UpdateBrokerAddressEvent;
import org.apache.rocketmq.controller.impl.heartbeat.BrokerLiveInfo;
import org.apache.rocketmq.controller.impl.heartbeat.DefaultBrokerHeartbeatManager;
import org.apache.rocketmq.controller.impl.manager.BrokerReplicaInfo;
import org.apache.rocketmq.controller.impl.manager.ReplicasInfoManager;
import org.apache.rocketmq.controller.impl.manager.SyncStateInfo;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.remoting.protocol.body.BrokerReplicasInfo;
import org.apache.rocketmq.remoting.protocol.body.ElectMasterResponseBody;
import org.apache.rocketmq.remoting.protocol.body.SyncStateSet;
import org.apache.rocketmq.remoting.protocol.header.controller.AlterSyncStateSetRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.ElectMasterRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.GetReplicaInfoRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.admin.CleanControllerBrokerDataRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.register.ApplyBrokerIdRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.register.GetNextBrokerIdRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.register.RegisterBrokerToControllerRequestHeader;
import org.apache.rocketmq.store.ha.autoswitch.EpochFileCache;

public final class RmqcheckDriver implements Wire.Driver {
    private static final String CLUSTER = "cluster";
    private static final String BROKER = "broker-a";
    // One logical tick of the model is this many milliseconds of the heartbeat manager's clock.
    private static final long TICK = 1_000_000L;

    private ControllerConfig config;
    private ReplicasInfoManager manager;
    private DefaultBrokerHeartbeatManager heartbeats;
    private final Map<Long, Long> lastBeat = new TreeMap<>(); // broker id -> tick of its last heartbeat
    // Each broker's heartbeat channel: the heartbeat manager forgets a broker when its channel closes.
    private final Map<Long, Channel> channels = new HashMap<>();
    private boolean heartbeatsStarted; // initialize()d: its executor runs the inactive-broker listeners
    private long timeoutTicks = 2;
    private final Map<String, EpochFileCache> caches = new HashMap<>();
    private final Path dir;

    private RmqcheckDriver(Path dir) {
        this.dir = dir;
        resetController(false, 2);
    }

    public static void main(String[] args) throws Exception {
        Wire.serve(args, "rmqcheck-epoch", RmqcheckDriver::new);
    }

    @Override
    public Map<String, Object> answer(String op, Map<String, Object> req) throws Throwable {
        if (op.startsWith("epoch_") || "find_consistent_point".equals(op)) {
            return epoch(op, req);
        }
        return controller(op, req);
    }

    // --- controller --------------------------------------------------------------------------

    private void resetController(boolean unclean, long timeout) {
        config = new ControllerConfig();
        config.setEnableElectUncleanMaster(unclean);
        manager = new ReplicasInfoManager(config);
        if (heartbeatsStarted) {
            heartbeats.shutdown();
        }
        heartbeats = new DefaultBrokerHeartbeatManager(config); // never started: no scan thread
        heartbeatsStarted = false;
        lastBeat.clear();
        channels.clear();
        timeoutTicks = timeout;
    }

    // The heartbeat manager reads System.currentTimeMillis(); before each request that depends
    // on liveness, every heartbeat is placed (now - last) ticks in the past, plus half a tick so
    // that "lastUpdate + timeout >= now" holds exactly when (now - last) <= timeout.
    private void setClock(long now) {
        long wall = System.currentTimeMillis();
        for (Map.Entry<Long, Long> e : lastBeat.entrySet()) {
            BrokerLiveInfo info = heartbeats.getBrokerLiveInfo(CLUSTER, BROKER, e.getKey());
            if (info != null) {
                info.setLastUpdateTimestamp(wall - (now - e.getValue()) * TICK + TICK / 2);
            }
        }
    }

    private boolean alive(String cluster, String broker, Long id) {
        return heartbeats.isBrokerActive(cluster, broker, id);
    }

    private BrokerLiveInfo liveInfo(String cluster, String broker, Long id) {
        return heartbeats.getBrokerLiveInfo(cluster, broker, id);
    }

    private Map<String, Object> controller(String op, Map<String, Object> req) throws Throwable {
        long now = req.containsKey("now") ? Json.longOf(req, "now") : 0;
        setClock(now);
        JSON.lastEncoded = null;
        ControllerResult<?> result;
        Object value = null;
        switch (op) {
            case "ctl_reset":
                resetController(Json.bool(req, "unclean"), Json.longOf(req, "heartbeat_timeout"));
                return reply(null, null, now);
            case "get_next_broker_id":
                result = manager.getNextBrokerId(new GetNextBrokerIdRequestHeader(CLUSTER, BROKER));
                value = ((org.apache.rocketmq.remoting.protocol.header.controller.register.GetNextBrokerIdResponseHeader)
                    result.getResponse()).getNextBrokerId();
                break;
            case "apply_broker_id":
                String code = Json.string(req, "address") + ";" + Json.string(req, "check_code");
                result = manager.applyBrokerId(new ApplyBrokerIdRequestHeader(CLUSTER, BROKER, Json.longOf(req, "id"), code));
                break;
            case "register_broker":
                result = manager.registerBroker(new RegisterBrokerToControllerRequestHeader(CLUSTER, BROKER,
                    Json.longOf(req, "id"), Json.string(req, "address")), this::alive);
                break;
            case "heartbeat":
                long id = Json.longOf(req, "id");
                Channel channel = channels.computeIfAbsent(id, k -> new EmbeddedChannel());
                heartbeats.onBrokerHeartbeat(CLUSTER, BROKER, Json.string(req, "address"), id, timeoutTicks * TICK, channel,
                    (int) Json.longOf(req, "epoch"), Json.longOf(req, "max_offset"), Json.longOf(req, "confirm_offset"),
                    (int) Json.longOf(req, "priority"));
                lastBeat.put(id, now);
                setClock(now);
                return reply(null, null, now);
            case "expire":
                // The controller forgets a broker whose heartbeats stopped (what the scan does
                // once the timeout passed) or whose channel closed: the entry is removed.
                // A broker that never sent a heartbeat closes a channel the manager does not
                // know (a connection before its first heartbeat, or after its entry went):
                // nothing is forgotten.
                Channel closed = channels.remove(Json.longOf(req, "id"));
                if (closed == null) {
                    closed = new EmbeddedChannel();
                }
                if (!heartbeatsStarted) {
                    heartbeats.initialize();
                    heartbeatsStarted = true;
                }
                heartbeats.onBrokerChannelClose(closed);
                return reply(null, null, now);
            case "elect":
                // id null: the controller's own trigger (brokerId -1, as ofControllerTrigger leaves it)
                long brokerId = req.get("id") == null ? -1L : Json.longOf(req, "id");
                ElectMasterRequestHeader header = new ElectMasterRequestHeader(CLUSTER, BROKER, brokerId,
                    Json.bool(req, "designate"));
                result = manager.electMaster(header, new DefaultElectPolicy(this::alive, this::liveInfo));
                break;
            case "alter_sss":
                Set<Long> members = new HashSet<>(Json.longs(req, "sss"));
                result = manager.alterSyncStateSet(new AlterSyncStateSetRequestHeader(BROKER, Json.longOf(req, "master"),
                    (int) Json.longOf(req, "master_epoch")), new SyncStateSet(members, (int) Json.longOf(req, "sss_epoch")),
                    this::alive);
                break;
            case "get_replica_info":
                result = manager.getReplicaInfo(new GetReplicaInfoRequestHeader(BROKER));
                break;
            case "clean":
                CleanControllerBrokerDataRequestHeader clean = new CleanControllerBrokerDataRequestHeader(CLUSTER, BROKER,
                    Json.string(req, "ids"), Json.bool(req, "living"));
                result = manager.cleanBrokerData(clean, this::alive);
                break;
            case "get_sync_state_data":
                result = manager.getSyncStateData(List.of(BROKER), this::alive);
                value = syncStateData(JSON.lastEncoded);
                break;
            case "scan":
                value = !manager.scanNeedReelectBrokerSets(this::alive).isEmpty();
                return reply(null, value, now);
            case "snapshot_restore":
                byte[] bytes = manager.serialize();
                ReplicasInfoManager restored = new ReplicasInfoManager(config);
                restored.deserializeFrom(bytes);
                manager = restored;
                return reply(null, null, now);
            default:
                return null;
        }
        Object body = JSON.lastEncoded;
        for (EventMessage event : result.getEvents()) {
            manager.applyEvent(event);
        }
        return reply(result, value, now, body);
    }

    private Map<String, Object> reply(ControllerResult<?> result, Object value, long now) throws Exception {
        return reply(result, value, now, null);
    }

    private Map<String, Object> reply(ControllerResult<?> result, Object value, long now, Object body) throws Exception {
        Map<String, Object> m = Wire.ok();
        m.put("code", result == null ? 0 : result.getResponseCode());
        m.put("remark", result == null ? null : result.getRemark());
        m.put("header", result == null ? new LinkedHashMap<>() : beanFields(result.getResponse()));
        m.put("body", body(body));
        List<Object> events = new ArrayList<>();
        if (result != null) {
            for (EventMessage e : result.getEvents()) {
                // A moved broker's new address (registerBroker's UpdateBrokerAddressEvent) is
                // applied above but not reported: the model holds no addresses, as the state's
                // broker addresses are not compared either.
                if (!(e instanceof UpdateBrokerAddressEvent)) {
                    events.add(event(e));
                }
            }
        }
        m.put("events", events);
        m.put("result", value);
        m.put("state", controllerState());
        m.put("live", live(now));
        return m;
    }

    private static Object body(Object body) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (body instanceof SyncStateSet) {
            m.put("sss", new TreeSet<>(((SyncStateSet) body).getSyncStateSet()));
            m.put("sss_epoch", ((SyncStateSet) body).getSyncStateSetEpoch());
        } else if (body instanceof ElectMasterResponseBody) {
            m.put("sss", new TreeSet<>(((ElectMasterResponseBody) body).getSyncStateSet()));
        } else {
            return null;
        }
        return m;
    }

    // getSyncStateData's body: [in-sync rows, other rows], each row [broker id, alive]; null
    // when the controller does not hold the set.
    private static Object syncStateData(Object body) {
        BrokerReplicasInfo.ReplicasInfo info = ((BrokerReplicasInfo) body).getReplicasInfoTable().get(BROKER);
        if (info == null) {
            return null;
        }
        List<Object> out = new ArrayList<>();
        for (List<BrokerReplicasInfo.ReplicaIdentity> group : List.of(info.getInSyncReplicas(), info.getNotInSyncReplicas())) {
            TreeMap<Long, Boolean> rows = new TreeMap<>();
            group.forEach(r -> rows.put(r.getBrokerId(), r.getAlive()));
            List<Object> list = new ArrayList<>();
            rows.forEach((id, alive) -> list.add(List.of(id, alive)));
            out.add(list);
        }
        return out;
    }

    private static Map<String, Object> event(EventMessage e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", e.getClass().getSimpleName());
        if (e instanceof ElectMasterEvent) {
            m.put("elected", ((ElectMasterEvent) e).getNewMasterElected());
            m.put("new_master", ((ElectMasterEvent) e).getNewMasterBrokerId());
        } else if (e instanceof AlterSyncStateSetEvent) {
            m.put("sss", new TreeSet<>(((AlterSyncStateSetEvent) e).getNewSyncStateSet()));
        } else if (e instanceof ApplyBrokerIdEvent) {
            m.put("id", ((ApplyBrokerIdEvent) e).getNewBrokerId());
        } else if (e instanceof CleanBrokerDataEvent) {
            Set<Long> ids = ((CleanBrokerDataEvent) e).getBrokerIdSetToClean();
            m.put("ids", ids == null ? null : new TreeSet<>(ids));
        } else if (e instanceof UpdateBrokerAddressEvent) {
            m.put("id", ((UpdateBrokerAddressEvent) e).getBrokerId());
            m.put("address", ((UpdateBrokerAddressEvent) e).getBrokerAddress());
        }
        return m;
    }

    // Response headers are plain beans: their non-null fields, by name.
    private static Map<String, Object> beanFields(Object bean) throws IllegalAccessException {
        Map<String, Object> m = new TreeMap<>();
        if (bean == null) {
            return m;
        }
        for (Class<?> c = bean.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
                    continue;
                }
                f.setAccessible(true);
                Object v = f.get(bean);
                if (v != null && !m.containsKey(f.getName())) {
                    m.put(f.getName(), v);
                }
            }
        }
        return m;
    }

    @SuppressWarnings("unchecked")
    private static <T> T field(Object owner, String name) throws ReflectiveOperationException {
        Field f = ReplicasInfoManager.class.getDeclaredField(name);
        f.setAccessible(true);
        return (T) f.get(owner);
    }

    private Map<String, Object> controllerState() throws ReflectiveOperationException {
        Map<String, BrokerReplicaInfo> replicas = field(manager, "replicaInfoTable");
        Map<String, SyncStateInfo> syncStates = field(manager, "syncStateSetInfoTable");
        BrokerReplicaInfo replica = replicas.get(BROKER);
        SyncStateInfo sync = syncStates.get(BROKER);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("exists", replica != null && sync != null);
        m.put("master", sync == null ? null : sync.getMasterBrokerId());
        m.put("master_address", sync == null || replica == null ? null : replica.getBrokerAddress(sync.getMasterBrokerId()));
        m.put("master_epoch", sync == null ? 0 : sync.getMasterEpoch());
        m.put("sss", sync == null ? List.of() : new TreeSet<>(sync.getSyncStateSet()));
        m.put("sss_epoch", sync == null ? 0 : sync.getSyncStateSetEpoch());
        Map<String, Object> brokers = new TreeMap<>();
        if (replica != null) {
            replica.getBrokerIdTable().forEach((id, address) -> brokers.put(String.valueOf(id), address));
        }
        m.put("brokers", brokers);
        m.put("next_id", replica == null ? 1L : replica.getNextAssignBrokerId());
        return m;
    }

    private Map<String, Object> live(long now) {
        setClock(now);
        Map<String, Object> m = new LinkedHashMap<>();
        for (Long id : lastBeat.keySet()) {
            BrokerLiveInfo info = heartbeats.getBrokerLiveInfo(CLUSTER, BROKER, id);
            if (info == null) {
                continue;
            }
            Map<String, Object> i = new LinkedHashMap<>();
            i.put("epoch", info.getEpoch());
            i.put("max_offset", info.getMaxOffset());
            i.put("confirm_offset", info.getConfirmOffset());
            i.put("priority", info.getElectionPriority());
            i.put("alive", heartbeats.isBrokerActive(CLUSTER, BROKER, id));
            m.put(String.valueOf(id), i);
        }
        return m;
    }

    // --- epoch caches ------------------------------------------------------------------------

    private Path file(String name) {
        return dir.resolve(name + ".epoch");
    }

    private static List<EpochEntry> entries(Map<String, Object> req, String key) {
        List<EpochEntry> out = new ArrayList<>();
        for (Object o : Json.list(req, key)) {
            List<?> pair = (List<?>) o;
            out.add(new EpochEntry(((Number) pair.get(0)).intValue(), ((Number) pair.get(1)).longValue()));
        }
        return out;
    }

    // AutoSwitchHAClient.doTruncate: a fresh cache of the master's entries with its end set to
    // the master's max offset; a fresh copy of the local entries with its end set to the local
    // max offset; local.findConsistentPoint(master).
    private static long truncationPoint(List<EpochEntry> local, long localMax, List<EpochEntry> master, long masterMax) {
        EpochFileCache masterCache = new EpochFileCache();
        masterCache.initCacheFromEntries(master);
        masterCache.setLastEpochEntryEndOffset(masterMax);
        EpochFileCache localCache = new EpochFileCache();
        localCache.initCacheFromEntries(local);
        localCache.setLastEpochEntryEndOffset(localMax);
        return localCache.findConsistentPoint(masterCache);
    }

    private Map<String, Object> epoch(String op, Map<String, Object> req) throws Exception {
        Map<String, Object> m = Wire.ok();
        if ("find_consistent_point".equals(op)) {
            m.put("result", truncationPoint(entries(req, "local"), Json.longOf(req, "local_max"), entries(req, "master"),
                Json.longOf(req, "master_max")));
            m.put("state", null);
            return m;
        }
        String name = Json.string(req, "name");
        Path path = file(name);
        Object value = null;
        if ("epoch_new".equals(op)) {
            Files.deleteIfExists(path);
            Files.deleteIfExists(Path.of(path + ".bak"));
            caches.put(name, new EpochFileCache(path.toString()));
        } else {
            EpochFileCache cache = caches.get(name);
            if (cache == null) {
                throw new Json.BadRequest("no epoch cache named " + name + " (send epoch_new first)");
            }
            switch (op) {
                case "epoch_append":
                    value = cache.appendEntry(new EpochEntry((int) Json.longOf(req, "epoch"), Json.longOf(req, "start")));
                    break;
                case "epoch_set_last_end":
                    cache.setLastEpochEntryEndOffset(Json.longOf(req, "end"));
                    break;
                case "epoch_truncate_suffix_by_epoch":
                    cache.truncateSuffixByEpoch((int) Json.longOf(req, "epoch"));
                    break;
                case "epoch_truncate_suffix_by_offset":
                    cache.truncateSuffixByOffset(Json.longOf(req, "offset"));
                    break;
                case "epoch_truncate_prefix_by_offset":
                    cache.truncatePrefixByOffset(Json.longOf(req, "offset"));
                    break;
                case "epoch_reload": // a broker restart: a new cache reads the checkpoint file (or its .bak)
                    EpochFileCache reloaded = new EpochFileCache(path.toString());
                    reloaded.initCacheFromFile(); // false only when file and .bak are unreadable: the entries show it
                    caches.put(name, reloaded);
                    break;
                case "epoch_lose_file":
                    Files.deleteIfExists(path);
                    Files.deleteIfExists(Path.of(path + ".bak"));
                    break;
                case "epoch_get_entry":
                    value = entry(cache.getEntry((int) Json.longOf(req, "epoch")));
                    break;
                case "epoch_find_by_offset":
                    value = entry(cache.findEpochEntryByOffset(Json.longOf(req, "offset")));
                    break;
                case "epoch_next_entry":
                    value = entry(cache.nextEntry((int) Json.longOf(req, "epoch")));
                    break;
                case "epoch_truncation_point":
                    value = truncationPoint(cache.getAllEntries(), Json.longOf(req, "local_max"), entries(req, "master"),
                        Json.longOf(req, "master_max"));
                    break;
                default:
                    return null;
            }
        }
        m.put("result", value);
        m.put("state", epochState(caches.get(name), path));
        return m;
    }

    private static List<Object> entry(EpochEntry e) {
        return e == null ? null : List.of(e.getEpoch(), e.getStartOffset(), e.getEndOffset());
    }

    private static Map<String, Object> epochState(EpochFileCache cache, Path path) throws Exception {
        Map<String, Object> m = new LinkedHashMap<>();
        List<Object> entries = new ArrayList<>();
        for (EpochEntry e : cache.getAllEntries()) {
            entries.add(entry(e));
        }
        m.put("entries", entries);
        m.put("last_epoch", cache.lastEpoch());
        // The checkpoint read back as a restarted broker reads it (file, else .bak).
        EpochFileCache reread = new EpochFileCache(path.toString());
        List<Object> disk = null;
        if (reread.initCacheFromFile()) {
            disk = new ArrayList<>();
            for (EpochEntry e : reread.getAllEntries()) {
                disk.add(List.of(e.getEpoch(), e.getStartOffset()));
            }
        }
        m.put("disk", disk);
        m.put("file", read(path));
        m.put("bak", read(Path.of(path + ".bak")));
        return m;
    }

    private static String read(Path p) throws Exception {
        return Files.exists(p) ? Files.readString(p) : null;
    }
}

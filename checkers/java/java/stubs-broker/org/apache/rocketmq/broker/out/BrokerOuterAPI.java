package org.apache.rocketmq.broker.out;

import java.lang.reflect.Field;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.common.Pair;
import org.apache.rocketmq.remoting.exception.RemotingConnectException;
import org.apache.rocketmq.remoting.protocol.body.SyncStateSet;
import org.apache.rocketmq.remoting.protocol.header.controller.ElectMasterResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.GetMetaDataResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.GetReplicaInfoResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.register.ApplyBrokerIdResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.register.GetNextBrokerIdResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.register.RegisterBrokerToControllerResponseHeader;

/**
 * rmqcheck's stand-in for RocketMQ's BrokerOuterAPI: the controller RPCs ReplicasManager makes,
 * each handed to the harness (`Transport`), which delivers it to RocketMQ's controller classes,
 * drops it or delays it. An answer is what rmqcheck's controller driver replies (code, remark,
 * response header fields, body); a code other than SUCCESS becomes the MQBrokerException the
 * real class throws, a request the harness did not deliver the RemotingConnectException of a
 * broken link. The controller's address is one name, always reachable: discovery is not what
 * is checked.
 */
public class BrokerOuterAPI {
    public static final String CONTROLLER = "127.0.0.1:9878";

    /** The harness's side of an RPC: the answer, or null when the request was not delivered. */
    public interface Transport {
        Map<String, Object> call(String op, Map<String, Object> args) throws InterruptedException;
    }

    private final Transport transport;

    public BrokerOuterAPI(Transport transport) {
        this.transport = transport;
    }

    public boolean checkAddressReachable(String address) {
        return true;
    }

    public List<String> dnsLookupAddressByDomain(String domain) {
        return List.of(domain);
    }

    public GetMetaDataResponseHeader getControllerMetaData(final String controllerAddress) throws Exception {
        GetMetaDataResponseHeader header = new GetMetaDataResponseHeader();
        header.setControllerLeaderAddress(CONTROLLER);
        header.setIsLeader(true);
        return header;
    }

    public SyncStateSet alterSyncStateSet(String controllerAddress, String brokerName, Long masterBrokerId,
        int masterEpoch, Set<Long> newSyncStateSet, int syncStateSetEpoch) throws Exception {
        Map<String, Object> answer = call("alter_sss", "master", masterBrokerId, "master_epoch", masterEpoch,
            "sss", newSyncStateSet, "sss_epoch", syncStateSetEpoch);
        return syncStateSet(answer);
    }

    public Pair<ElectMasterResponseHeader, Set<Long>> brokerElect(String controllerAddress, String clusterName,
        String brokerName, Long brokerId) throws Exception {
        Map<String, Object> answer = transport.call("elect", args("id", brokerId));
        if (answer == null) {
            throw new RemotingConnectException(controllerAddress);
        }
        int code = ((Number) answer.get("code")).intValue();
        if (code != 0 && code != 2011) { // SUCCESS and CONTROLLER_MASTER_STILL_EXIST are answers
            throw new MQBrokerException(code, String.valueOf(answer.get("remark")));
        }
        return new Pair<>(header(new ElectMasterResponseHeader(), answer), syncStateSet(answer).getSyncStateSet());
    }

    public GetNextBrokerIdResponseHeader getNextBrokerId(String clusterName, String brokerName, String controllerAddress)
        throws Exception {
        return header(new GetNextBrokerIdResponseHeader(), call("get_next_broker_id"));
    }

    public ApplyBrokerIdResponseHeader applyBrokerId(String clusterName, String brokerName, Long brokerId,
        String registerCheckCode, String controllerAddress) throws Exception {
        return header(new ApplyBrokerIdResponseHeader(), call("apply_broker_id", "id", brokerId, "check_code",
            registerCheckCode));
    }

    public Pair<RegisterBrokerToControllerResponseHeader, Set<Long>> registerBrokerToController(String clusterName,
        String brokerName, Long brokerId, String brokerAddress, String controllerAddress) throws Exception {
        Map<String, Object> answer = call("register_broker", "id", brokerId, "address", brokerAddress);
        return new Pair<>(header(new RegisterBrokerToControllerResponseHeader(), answer),
            syncStateSet(answer).getSyncStateSet());
    }

    public Pair<GetReplicaInfoResponseHeader, SyncStateSet> getReplicaInfo(String controllerAddress, String brokerName)
        throws Exception {
        Map<String, Object> answer = call("get_replica_info");
        return new Pair<>(header(new GetReplicaInfoResponseHeader(), answer), syncStateSet(answer));
    }

    public void sendHeartbeatToController(String controllerAddress, String clusterName, String brokerAddr,
        String brokerName, Long brokerId, int sendHeartBeatTimeoutMills, boolean isInBrokerContainer, int epoch,
        long maxOffset, long confirmOffset, long controllerHeartBeatTimeoutMills, int electionPriority) {
        try { // one-way in the real class: nothing comes back, a failure is only logged
            transport.call("heartbeat", args("id", brokerId, "address", brokerAddr, "epoch", epoch, "max_offset",
                maxOffset, "confirm_offset", confirmOffset, "priority", electionPriority));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // --- answers ---------------------------------------------------------------------------

    private Map<String, Object> call(String op, Object... keyValues) throws Exception {
        Map<String, Object> answer = transport.call(op, args(keyValues));
        if (answer == null) {
            throw new RemotingConnectException(CONTROLLER);
        }
        int code = ((Number) answer.get("code")).intValue();
        if (code != 0) {
            throw new MQBrokerException(code, String.valueOf(answer.get("remark")));
        }
        return answer;
    }

    private static Map<String, Object> args(Object... keyValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            m.put((String) keyValues[i], keyValues[i + 1]);
        }
        return m;
    }

    @SuppressWarnings("unchecked")
    private static SyncStateSet syncStateSet(Map<String, Object> answer) {
        Map<String, Object> body = (Map<String, Object>) answer.get("body");
        Set<Long> members = new HashSet<>();
        int epoch = 0;
        if (body != null) {
            for (Object id : (List<Object>) body.get("sss")) {
                members.add(((Number) id).longValue());
            }
            Object e = body.get("sss_epoch");
            epoch = e == null ? 0 : ((Number) e).intValue();
        }
        return new SyncStateSet(members, epoch);
    }

    /** The response header: its fields set by name from the answer's header. */
    @SuppressWarnings("unchecked")
    private static <T> T header(T header, Map<String, Object> answer) throws ReflectiveOperationException {
        Map<String, Object> fields = (Map<String, Object>) answer.get("header");
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            Field f = field(header.getClass(), e.getKey());
            if (f == null || e.getValue() == null) {
                continue;
            }
            f.setAccessible(true);
            Object v = e.getValue();
            Class<?> type = f.getType();
            if (type == Long.class || type == long.class) {
                v = ((Number) v).longValue();
            } else if (type == Integer.class || type == int.class) {
                v = ((Number) v).intValue();
            } else if (type == Boolean.class || type == boolean.class) {
                v = Boolean.valueOf(String.valueOf(v));
            } else if (type == String.class) {
                v = String.valueOf(v);
            }
            f.set(header, v);
        }
        return header;
    }

    private static Field field(Class<?> c, String name) {
        for (; c != null && c != Object.class; c = c.getSuperclass()) {
            try {
                return c.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                // the superclass may have it
            }
        }
        return null;
    }
}

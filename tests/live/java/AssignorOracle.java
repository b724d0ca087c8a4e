import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;
import org.apache.kafka.common.utils.internals.LogContext;

/**
 * Kafka 4.4's own server-side assignors, fed the way its group coordinator feeds them, as an oracle
 * for kgroup's. One case per stdin line, one answer per stdout line.
 *
 * A case: "ASSIGNOR|HIGHWATER|TOPICS|MEMBERS" where TOPICS is "id:count,..." and MEMBERS is
 * "id/added/instance/sub1+sub2/t=p.p;t=p,..." in the order the members joined ("added" is 1 for a
 * member the operation adds; instance "-" for none; a topic "t" by its index in TOPICS).
 * The members are put into a TimelineHashMap (grown to HIGHWATER entries first, as a group that once
 * held that many members), walked with the added ones last (UpdatedMembersAndTargetAssignmentView),
 * and put into a new HashMap (TargetAssignmentBuilder.build), exactly as the coordinator does.
 * The answer: "member=t:p.p;t:p,..." for every member, in the order the assignor's result map
 * iterates the members of the group spec; or "error MESSAGE".
 */
public class AssignorOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            try {
                System.out.println(solve(line));
            } catch (Exception e) {
                System.out.println("error " + e.getMessage());
            }
            System.out.flush();
        }
    }

    static String solve(String line) {
        String[] parts = line.split("\\|", -1);
        String assignorName = parts[0];
        int highWater = Integer.parseInt(parts[1]);
        List<Uuid> topicIds = new ArrayList<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        for (String topic : parts[2].split(",")) {
            String[] kv = topic.split(":");
            Uuid id = Uuid.fromString(kv[0]);
            topicIds.add(id);
            counts.put(id, Integer.parseInt(kv[1]));
        }
        SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
        TimelineHashMap<String, MemberSubscriptionAndAssignmentImpl> table = new TimelineHashMap<>(registry, 0);
        for (int i = 0; i < highWater; i++) {
            table.put("filler-" + i, member(Optional.empty(), Set.of(), Map.of()));
        }
        for (int i = 0; i < highWater; i++) {
            table.remove("filler-" + i);
        }
        List<String> added = new ArrayList<>();
        Map<String, MemberSubscriptionAndAssignmentImpl> additions = new HashMap<>();
        Set<String> subscriptions = new HashSet<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (String spec : parts[3].split(",")) {
            String[] f = spec.split("/", -1);
            Set<Uuid> subscribed = new HashSet<>();
            for (String t : f[3].isEmpty() ? new String[0] : f[3].split("\\+")) {
                subscribed.add(topicIds.get(Integer.parseInt(t)));
            }
            subscriptions.add(new TreeSet<>(subscribed.stream().map(Uuid::toString).toList()).toString());
            Map<Uuid, Set<Integer>> current = new HashMap<>();
            for (String row : f[4].isEmpty() ? new String[0] : f[4].split(";")) {
                String[] tp = row.split("=");
                Uuid id = topicIds.get(Integer.parseInt(tp[0]));
                List<Integer> partitions = new ArrayList<>();
                for (String p : tp[1].split("\\.")) {
                    partitions.add(Integer.parseInt(p));
                    inverted.computeIfAbsent(id, k -> new HashMap<>()).put(Integer.parseInt(p), f[0]);
                }
                current.put(id, new HashSet<>(partitions));
            }
            Optional<String> instance = f[2].equals("-") ? Optional.empty() : Optional.of(f[2]);
            MemberSubscriptionAndAssignmentImpl m = member(instance, subscribed, current);
            if (f[1].equals("1")) {
                added.add(f[0]);
                additions.put(f[0], m);
            } else {
                table.put(f[0], m);
            }
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> memberSpecs = new HashMap<>();
        table.forEach(memberSpecs::put);
        for (String id : added) {
            memberSpecs.put(id, additions.get(id));
        }
        SubscriptionType type = subscriptions.size() < 2 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        GroupSpecImpl groupSpec = new GroupSpecImpl(java.util.Collections.unmodifiableMap(memberSpecs), type, inverted);
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            public int numPartitions(Uuid topicId) {
                return counts.getOrDefault(topicId, -1);
            }

            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        GroupAssignment result = assignorName.equals("range")
            ? new RangeAssignor().assign(groupSpec, describer)
            : new UniformAssignor().assign(groupSpec, describer);
        StringBuilder out = new StringBuilder();
        for (String memberId : memberSpecs.keySet()) {
            MemberAssignment assignment = result.members().get(memberId);
            if (out.length() > 0) {
                out.append(',');
            }
            out.append(memberId).append('=');
            List<String> rows = new ArrayList<>();
            if (assignment != null) {
                for (Map.Entry<Uuid, Set<Integer>> e : assignment.partitions().entrySet()) {
                    if (e.getValue().isEmpty()) {
                        continue;
                    }
                    List<String> ps = new ArrayList<>();
                    for (int p : new TreeSet<>(e.getValue())) {
                        ps.add(Integer.toString(p));
                    }
                    rows.add(topicIds.indexOf(e.getKey()) + ":" + String.join(".", ps));
                }
            }
            java.util.Collections.sort(rows);
            out.append(String.join(";", rows));
        }
        return out.toString();
    }

    static MemberSubscriptionAndAssignmentImpl member(Optional<String> instance, Set<Uuid> subscribed,
                                                      Map<Uuid, Set<Integer>> current) {
        return new MemberSubscriptionAndAssignmentImpl(Optional.empty(), instance, subscribed, new Assignment(current));
    }
}

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupResult;

/**
 * Kafka's Admin.removeMembersFromConsumerGroup for kgroup's serve tests.
 * Arguments: bootstrap, group id, then the group.instance.id of each member to remove (none: all).
 * It prints "removed <instance id>" or "failed <instance id> <error class>" per member ("removed all"
 * or "failed all <error class>" without ids).
 */
public class RemoveMembers {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        List<MemberToRemove> members = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            members.add(new MemberToRemove(args[i]));
        }
        RemoveMembersFromConsumerGroupOptions options = members.isEmpty()
            ? new RemoveMembersFromConsumerGroupOptions()
            : new RemoveMembersFromConsumerGroupOptions(members);
        try (Admin admin = Admin.create(props)) {
            RemoveMembersFromConsumerGroupResult result = admin.removeMembersFromConsumerGroup(args[1], options);
            if (members.isEmpty()) {
                try {
                    result.all().get();
                    System.out.println("removed all");
                } catch (Exception e) {
                    System.out.println("failed all " + e.getCause().getClass().getSimpleName());
                }
            }
            for (MemberToRemove member : members) {
                try {
                    result.memberResult(member).get();
                    System.out.println("removed " + args[2 + members.indexOf(member)]);
                } catch (Exception e) {
                    System.out.println("failed " + args[2 + members.indexOf(member)] + " "
                                       + e.getCause().getClass().getSimpleName());
                }
            }
        }
    }
}

import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;

/**
 * A streams group's members as Kafka's Admin 4.4 describes them (StreamsGroupDescribe), for what
 * kafka-streams-groups does not print: each member's group.instance.id.
 * Arguments: bootstrap, group id. Prints "state STATE" then one line per member:
 * "member MEMBER_ID instance INSTANCE_ID|- process PROCESS_ID client CLIENT_ID epoch N".
 */
public class StreamsGroupMembers {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(props)) {
            StreamsGroupDescription group = admin.describeStreamsGroups(List.of(args[1])).all().get().get(args[1]);
            System.out.println("state " + group.groupState());
            for (StreamsGroupMemberDescription member : group.members()) {
                System.out.println("member " + member.memberId() + " instance " + member.instanceId().orElse("-")
                    + " process " + member.processId() + " client " + member.clientId() + " epoch " + member.memberEpoch());
            }
        }
    }
}

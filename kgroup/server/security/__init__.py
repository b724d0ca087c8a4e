"""kgroup.server.security: who a connection is, and what it may do.

Modules: `listeners` (`PROTOCOL://HOST:PORT` and the TLS context), `admission` (what each listener
asks of a connection before its requests are served: TLS, SASL, the principal), `sasl` and `scram`
(Kafka's SASL exchanges and salted credentials), `acl` (`--acl` rules and the authorizer), `audit`
(the authorizer log), `authorization` / `authorization_groups` / `authorization_parts` (each
handler of the API table wrapped in the check Kafka's `KafkaApis` makes).
"""

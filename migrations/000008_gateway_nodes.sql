-- The database node each gateway writes through (issue 23, "single writer"). Under MariaDB Galera,
-- Orbit supports one writer node at a time: every gateway reaches the cluster through one proxy
-- address that sends all connections to the same node. Each gateway records here, at start and on
-- a heartbeat, @@wsrep_on and @@wsrep_node_name of the node its connections reach; a gateway whose
-- node differs from the one the other live gateways write through refuses to start (and a running
-- one warns), because two writers turn row locks into certification failures and make the node-
-- local GET_LOCKs (the Idempotency-Key lock, event pruning) per node. Rows of gateways that stopped
-- are deleted by them; rows of killed ones go stale (seen_at) and are ignored, then pruned.
CREATE TABLE gateway_nodes (
  node_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'ORBIT_NODE_ID of the gateway',
  wsrep_on TINYINT UNSIGNED NOT NULL COMMENT '1 when the gateway''s connections reach a Galera node with replication on (@@global.wsrep_on), else 0',
  wsrep_node_name VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL COMMENT '@@wsrep_node_name of the database node the gateway writes through; NULL when wsrep_on = 0',
  started_at DATETIME(3) NOT NULL COMMENT 'database-clock time the gateway registered (UTC)',
  seen_at DATETIME(3) NOT NULL COMMENT 'database-clock time of the gateway''s last check-in (UTC); a row not seen for a while belongs to a gateway that is gone',
  PRIMARY KEY (node_id),
  KEY gateway_nodes_seen (seen_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='running gateways and the database node each writes through (single-writer check under Galera)';

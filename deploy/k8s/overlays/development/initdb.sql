-- The services' databases, created on PostgreSQL's first start (each
-- service migrates its own at start).
CREATE DATABASE switchboard_identity;
CREATE DATABASE switchboard_billing;
CREATE DATABASE switchboard_connections;
CREATE DATABASE switchboard_contacts;
CREATE DATABASE switchboard_messaging;
CREATE DATABASE switchboard_webhooks;
CREATE DATABASE switchboard_partners;
CREATE DATABASE switchboard_sales;

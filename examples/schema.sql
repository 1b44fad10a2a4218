-- A small shop: `almanac --store ./shop sql -f examples/schema.sql`
-- commits all of it as one catalog version (see docs/sql.md).
CREATE SCHEMA sales;

CREATE TABLE sales.customers (
    id BIGINT PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    email VARCHAR(200)
);

CREATE TABLE sales.orders (
    id BIGINT PRIMARY KEY,
    customer_id BIGINT NOT NULL,
    amount DECIMAL(12, 2) DEFAULT 0,
    placed TIMESTAMP WITH LOCAL TIME ZONE
);

CREATE INDEX orders_by_customer ON sales.orders (customer_id, placed DESC);

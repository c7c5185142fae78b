-- TPC-H (workload W2): customers are the entity, customer <- orders <- lineitem their family;
-- nation, region, part and supplier are dimension tables read by the hierarchies below and
-- released beside the family (LABEL TABLE ... AS DIMENSION) (relanon::generate::tpch; `relanon generate tpch --sf 0.01 --out
-- out/tpch-0.1.sqlite`, or `--out out/tpch-0.01` for Parquet: change `source` and `target`).
-- The SQLite source carries its own keys; a Parquet copy needs the ALTER TABLEs. Paths are
-- relative to this file.

SET source = '../out/tpch-0.1.sqlite';
SET target = '../out//tmp/an/tpch-rel.sqlite';

-- Nation -> region (5 regions of 5 nations).
CREATE HIERARCHY nation_h AS
  SELECT n.n_nationkey, r.r_name FROM nation n JOIN region r ON r.r_regionkey = n.n_regionkey;
-- Supplier -> its nation -> its region.
CREATE HIERARCHY supplier_h AS
  SELECT s.s_suppkey, n.n_name, r.r_name
  FROM supplier s JOIN nation n ON n.n_nationkey = s.s_nationkey
                  JOIN region r ON r.r_regionkey = n.n_regionkey;
-- Part -> its type (150 types, e.g. 'STANDARD POLISHED TIN') -> the type's first word (6).
CREATE HIERARCHY part_h AS
  SELECT p_partkey, p_type,
         CASE WHEN p_type LIKE 'STANDARD %' THEN 'STANDARD'
              WHEN p_type LIKE 'SMALL %'    THEN 'SMALL'
              WHEN p_type LIKE 'MEDIUM %'   THEN 'MEDIUM'
              WHEN p_type LIKE 'LARGE %'    THEN 'LARGE'
              WHEN p_type LIKE 'ECONOMY %'  THEN 'ECONOMY'
              ELSE 'PROMO' END
  FROM part;
CREATE HIERARCHY segment_h AS VALUES
  ('AUTOMOBILE', 'industry'), ('MACHINERY', 'industry'), ('BUILDING', 'industry'),
  ('FURNITURE', 'household'), ('HOUSEHOLD', 'household');
-- Account balances are -999.99 .. 9999.99.
CREATE HIERARCHY acctbal_h AS BANDS (1000, 5000, 10000);
-- Order and ship dates are 1992-01-01 .. 1998-12-31.
CREATE HIERARCHY date_h AS DATE PARTS (month, quarter, year);
CREATE HIERARCHY priority_h AS VALUES
  ('1-URGENT', 'high'), ('2-HIGH', 'high'), ('3-MEDIUM', 'medium'),
  ('4-NOT SPECIFIED', 'low'), ('5-LOW', 'low');
CREATE HIERARCHY shipmode_h AS VALUES
  ('AIR', 'air'), ('REG AIR', 'air'), ('TRUCK', 'ground'), ('RAIL', 'ground'),
  ('SHIP', 'sea'), ('MAIL', 'parcel'), ('FOB', 'parcel');

ALTER TABLE region ADD PRIMARY KEY (r_regionkey);
ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
ALTER TABLE part ADD PRIMARY KEY (p_partkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
ALTER TABLE nation ADD FOREIGN KEY (n_regionkey) REFERENCES region (r_regionkey);
ALTER TABLE supplier ADD FOREIGN KEY (s_nationkey) REFERENCES nation (n_nationkey);
ALTER TABLE customer ADD FOREIGN KEY (c_nationkey) REFERENCES nation (n_nationkey);
ALTER TABLE orders ADD FOREIGN KEY (o_custkey) REFERENCES customer (c_custkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_orderkey) REFERENCES orders (o_orderkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_partkey) REFERENCES part (p_partkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_suppkey) REFERENCES supplier (s_suppkey);

CREATE ENTITY customer ON customer (c_custkey);

-- The dimensions are about parts, suppliers (companies) and places, not about customers.
LABEL TABLE region   AS DIMENSION;
LABEL TABLE region   DEFAULT INSENSITIVE;
LABEL TABLE nation   AS DIMENSION;
LABEL TABLE nation   DEFAULT INSENSITIVE;
LABEL TABLE part     AS DIMENSION;
LABEL TABLE part     DEFAULT INSENSITIVE;
LABEL TABLE supplier AS DIMENSION;
LABEL TABLE supplier DEFAULT INSENSITIVE;

-- Names, addresses and free text point at one customer; the phone number's prefix is the
-- nation (TPC-H 4.2.2.9), so it would undo the nation's generalization.
LABEL COLUMN customer.c_name        AS IDENTIFIER;
LABEL COLUMN customer.c_address     AS IDENTIFIER;
LABEL COLUMN customer.c_phone       AS IDENTIFIER;
LABEL COLUMN customer.c_comment     AS IDENTIFIER;
LABEL COLUMN customer.c_nationkey   AS QUASI IDENTIFIER USING nation_h;
LABEL COLUMN customer.c_mktsegment  AS QUASI IDENTIFIER USING segment_h;
LABEL COLUMN customer.c_acctbal     AS QUASI IDENTIFIER USING acctbal_h;

LABEL COLUMN orders.o_orderdate     AS QUASI IDENTIFIER USING date_h;
LABEL COLUMN orders.o_orderpriority AS QUASI IDENTIFIER USING priority_h;
-- Total prices are ~900 .. ~560 000; these buckets hold 5-20% of the orders each.
LABEL COLUMN orders.o_totalprice    AS SENSITIVE BUCKETS (0, 25000, 50000, 100000, 150000, 200000, 250000, 300000, 600000);
LABEL COLUMN orders.o_orderstatus   AS INSENSITIVE;
LABEL COLUMN orders.o_shippriority  AS INSENSITIVE;
-- The clerk and the comment single an order out.
LABEL COLUMN orders.o_clerk         AS IDENTIFIER;
LABEL COLUMN orders.o_comment       AS IDENTIFIER;

-- The line number is part of lineitem's key but says only where a line sits in its order
-- (the number of lines is the tree's shape, published anyway); the release keys lines by a
-- surrogate, lineitem_key.
LABEL COLUMN lineitem.l_linenumber  AS INSENSITIVE;
LABEL COLUMN lineitem.l_partkey     AS QUASI IDENTIFIER USING part_h;
LABEL COLUMN lineitem.l_suppkey     AS QUASI IDENTIFIER USING supplier_h;
LABEL COLUMN lineitem.l_shipmode    AS QUASI IDENTIFIER USING shipmode_h;
LABEL COLUMN lineitem.l_shipdate    AS QUASI IDENTIFIER USING date_h;
-- Extended prices are ~900 .. ~105 000.
LABEL COLUMN lineitem.l_extendedprice AS SENSITIVE BUCKETS (0, 10000, 20000, 30000, 40000, 50000, 60000, 80000, 110000);
LABEL COLUMN lineitem.l_quantity    AS INSENSITIVE;
LABEL COLUMN lineitem.l_discount    AS INSENSITIVE;
LABEL COLUMN lineitem.l_tax         AS INSENSITIVE;
LABEL COLUMN lineitem.l_returnflag  AS INSENSITIVE;
LABEL COLUMN lineitem.l_linestatus  AS INSENSITIVE;
LABEL COLUMN lineitem.l_shipinstruct AS INSENSITIVE;
-- Commit and receipt dates lie within days of the ship date and would undo its
-- generalization; the comment is free text.
LABEL COLUMN lineitem.l_commitdate  AS IDENTIFIER;
LABEL COLUMN lineitem.l_receiptdate AS IDENTIFIER;
LABEL COLUMN lineitem.l_comment     AS IDENTIFIER;

ANONYMIZE customer WITH (model = 'anatomy', l = 3, variant = 't-t', seed = 7);

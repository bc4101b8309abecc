-- The H2 benchmark workload: an in-memory database of a few hundred
-- thousand rows, indexes, joins, GROUP BY, sorts and updates.
-- Run by the harness with: java -cp h2.jar org.h2.tools.RunScript -url jdbc:h2:mem:bench -script h2-workload.sql

CREATE TABLE customer(id INT PRIMARY KEY, region INT, name VARCHAR(40), credit DECIMAL(12,2));
CREATE TABLE product(id INT PRIMARY KEY, category INT, price DECIMAL(10,2), name VARCHAR(40));
CREATE TABLE orders(id INT PRIMARY KEY, customer_id INT, order_day INT, status INT);
CREATE TABLE line(order_id INT, product_id INT, quantity INT, discount DECIMAL(4,2));

INSERT INTO customer SELECT x, MOD(x, 50), 'customer-' || x, MOD(x * 7919, 100000) / 10.0 FROM SYSTEM_RANGE(1, 60000);
INSERT INTO product SELECT x, MOD(x, 200), MOD(x * 31, 5000) / 10.0 + 1, 'product-' || x FROM SYSTEM_RANGE(1, 20000);
INSERT INTO orders SELECT x, 1 + MOD(x * 13, 60000), MOD(x, 365), MOD(x, 4) FROM SYSTEM_RANGE(1, 200000);
INSERT INTO line SELECT 1 + MOD(x, 200000), 1 + MOD(x * 17, 20000), 1 + MOD(x, 9), MOD(x, 20) / 100.0 FROM SYSTEM_RANGE(1, 600000);

CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX line_order ON line(order_id);
CREATE INDEX line_product ON line(product_id);
CREATE INDEX customer_region ON customer(region);

-- Revenue by region and category (join of four tables, GROUP BY, sort).
SELECT c.region, p.category, SUM(l.quantity * p.price * (1 - l.discount)) AS revenue, COUNT(*) AS lines
FROM line l JOIN orders o ON o.id = l.order_id JOIN customer c ON c.id = o.customer_id JOIN product p ON p.id = l.product_id
GROUP BY c.region, p.category ORDER BY revenue DESC LIMIT 20;

-- Best customers per status.
SELECT o.status, o.customer_id, SUM(l.quantity) AS items
FROM orders o JOIN line l ON l.order_id = o.id
GROUP BY o.status, o.customer_id ORDER BY items DESC, o.customer_id LIMIT 50;

-- Sort a large result.
SELECT id, name, credit FROM customer ORDER BY credit DESC, name LIMIT 1000;

-- Updates through an index and a full scan.
UPDATE orders SET status = MOD(status + 1, 4) WHERE customer_id BETWEEN 1000 AND 20000;
UPDATE product SET price = price * 1.01 WHERE category < 100;

-- Correlated subquery and DISTINCT.
SELECT COUNT(DISTINCT o.customer_id) FROM orders o
WHERE EXISTS (SELECT 1 FROM line l WHERE l.order_id = o.id AND l.quantity > 7);

-- Aggregates again after the updates.
SELECT p.category, AVG(p.price), MAX(l.quantity), COUNT(*)
FROM product p JOIN line l ON l.product_id = p.id
GROUP BY p.category ORDER BY 2 DESC LIMIT 10;

SELECT c.region, COUNT(DISTINCT o.id), SUM(l.quantity)
FROM customer c JOIN orders o ON o.customer_id = c.id JOIN line l ON l.order_id = o.id
WHERE o.order_day BETWEEN 100 AND 200
GROUP BY c.region ORDER BY 3 DESC;

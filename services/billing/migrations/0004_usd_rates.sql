-- +goose Up
SET lock_timeout = '5s';

-- The Central Bank of Russia's rate of a currency, one per day, shared by
-- every billing replica: the first replica to need a day's rate fetches it
-- from the Bank's daily feed and stores it here (INSERT ... ON CONFLICT DO
-- NOTHING, so the first writer wins), and every charge of that day converts
-- at it. day is the Moscow calendar date the rate was asked for; rate_date
-- is the date the Bank set it for (ValCurs/@Date), which differs on weekends
-- and holidays. rate is roubles per one unit of the currency, at the feed's
-- 4 decimals.
CREATE TABLE conversion_rates (
    day        date          NOT NULL,
    currency   text          NOT NULL,
    rate       numeric(12,4) NOT NULL CHECK (rate > 0),
    rate_date  date          NOT NULL,
    fetched_at timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (day, currency)
);

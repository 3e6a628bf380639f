"""The stateful Nexmark queries Spark Structured Streaming can express, each beside its oracle:
Flink's SQL text, run as a batch query over the same events.

Every query reads the views of views.py, which carry Flink's watermark; each ``Query`` says how
it differs from Flink's text. Every query runs in append mode: most emit each row once, when
the watermark closes it; the two ranking queries emit a key's rows again when they change,
with a version a key, and the rows of a key's latest version are its result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rockstate.nexmark import ranked

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from rockstate.nexmark.views import Views

APPEND = "append"
# The ten seconds of Flink's tumbling and hopping windows, and q5's two-second slide.
WINDOW, SLIDE = "10 seconds", "2 seconds"


@dataclass(frozen=True)
class Query:
    """One Nexmark query: its streaming form, its oracle (Flink's SQL over a batch of the same
    events, the views named ``person``, ``auction`` and ``bid``), and how it differs from
    Flink's text."""

    name: str
    title: str
    mode: str
    build: Callable[[Views], DataFrame]
    oracle_sql: str
    differs: str
    # An upsert stream's key columns: its result is the rows of each key's latest ``version``
    # (a column the output has and the result drops).
    keys: tuple[str, ...] = ()
    needs_pandas: bool = False
    # The views it reads (the oracle registers these).
    reads: tuple[str, ...] = field(default=("bid",))


def _q3(v: Views) -> DataFrame:
    a = v.auction.where("category = 10").alias("A")
    p = v.person.where("state IN ('OR', 'ID', 'CA')").alias("P")
    return a.join(p, _expr("A.seller = P.id")).select("P.name", "P.city", "P.state", "A.id")


def _auction_bids(v: Views) -> DataFrame:
    """Each auction with each of its bids placed while it was open (q4, q9). The bound on the
    bid's time by the auction's start lets Spark drop both sides' rows once the watermark
    passes them."""
    longest = f"INTERVAL {v.config.max_auction_ms} MILLISECONDS"
    return v.auction.alias("A").join(v.bid.alias("B"), _expr(
        "A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires "
        f"AND B.dateTime <= A.dateTime + {longest}"))


def _q4(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    final = _auction_bids(v).groupBy("A.id", "A.category", "A.dateTime") \
        .agg(F.max("B.price").alias("final"))
    return (final.groupBy("category", F.window("dateTime", WINDOW).alias("w"))
            .agg(F.avg("final").alias("avg_final"))
            .select("category", F.col("w.start").alias("starttime"), "avg_final"))


def _q5(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    counts = v.bid.groupBy("auction", F.window("dateTime", WINDOW, SLIDE).alias("w")) \
        .agg(F.count("*").alias("num"))
    # The slide is the second window's size, so it holds the counts of exactly one window.
    per_window = counts.groupBy(F.window(F.window_time("w"), SLIDE).alias("w2")).agg(
        F.max("num").alias("maxn"), F.collect_list(F.struct("auction", "num")).alias("all"))
    hot = per_window.select("w2", "maxn", F.explode("all").alias("a")) \
        .where(F.col("a.num") >= F.col("maxn"))
    return hot.select(F.col("a.auction").alias("auction"), F.col("a.num").alias("num"),
                      (F.col("w2.end") - F.expr(f"INTERVAL {WINDOW}")).alias("starttime"),
                      F.col("w2.end").alias("endtime"))


def _q7(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    top = v.bid.groupBy(F.window("dateTime", WINDOW).alias("w")).agg(
        F.max(F.struct("price", "auction", "bidder", "dateTime", "extra")).alias("b"))
    return top.select("b.auction", "b.price", "b.bidder", "b.dateTime", "b.extra",
                      F.col("w.end").alias("window_end"))


def _q8(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    p = v.person.select("id", "name", F.window("dateTime", WINDOW).alias("pw"))
    a = v.auction.select("seller", F.window("dateTime", WINDOW).alias("aw")) \
        .dropDuplicates(["seller", "aw"])
    return p.join(a, _expr("id = seller AND pw = aw")).select(
        "id", "name", F.col("pw.start").alias("starttime"))


def _q9(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    auction_columns = ["id", "itemName", "description", "initialBid", "reserve", "dateTime",
                       "expires", "seller", "category", "extra"]
    # The winner: the highest price, then the earliest bid, then the other columns.
    winner = F.max(F.struct(F.col("B.price").alias("price"),
                            (-F.unix_micros("B.dateTime")).alias("earliest"),
                            F.col("B.bidder").alias("bidder"),
                            F.col("B.extra").alias("extra"),
                            F.col("B.dateTime").alias("dateTime")))
    won = _auction_bids(v).groupBy(*(f"A.{c}" for c in auction_columns)) \
        .agg(winner.alias("w"))
    return won.select(*auction_columns, F.col("id").alias("auction"), "w.bidder", "w.price",
                      F.col("w.dateTime").alias("bid_dateTime"),
                      F.col("w.extra").alias("bid_extra"))


def _q11(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    sessions = v.bid.groupBy("bidder", F.session_window("dateTime", WINDOW).alias("s")) \
        .agg(F.count("*").alias("bid_count"))
    return sessions.select("bidder", "bid_count", F.col("s.start").alias("starttime"),
                           F.col("s.end").alias("endtime"))


def _price_ranks() -> list:
    from pyspark.sql import functions as F

    price = F.col("price")
    return [F.count("*").alias("total_bids"),
            F.count(F.when(price < 10_000, 1)).alias("rank1_bids"),
            F.count(F.when((price >= 10_000) & (price < 1_000_000), 1)).alias("rank2_bids"),
            F.count(F.when(price >= 1_000_000, 1)).alias("rank3_bids")]


def _q17(v: Views) -> DataFrame:
    from pyspark.sql import functions as F

    day = v.bid.groupBy("auction", F.window("dateTime", "1 day").alias("d")).agg(
        *_price_ranks(), F.min("price").alias("min_price"), F.max("price").alias("max_price"),
        F.avg("price").alias("avg_price"), F.sum("price").alias("sum_price"))
    return day.select("auction", F.date_format("d.start", "yyyy-MM-dd").alias("day"),
                      "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "min_price",
                      "max_price", "avg_price", "sum_price")


def _q18(v: Views) -> DataFrame:
    from pyspark.sql.streaming.state import GroupStateTimeout

    return v.bid.select(*ranked.BID_COLUMNS).groupBy("bidder", "auction").applyInPandasWithState(
        ranked.last_bid, _bid_schema() + ", version LONG", ranked.LAST_BID_STATE, APPEND,
        GroupStateTimeout.NoTimeout)


def _q19(v: Views) -> DataFrame:
    from pyspark.sql.streaming.state import GroupStateTimeout

    return v.bid.select(*ranked.BID_COLUMNS).groupBy("auction").applyInPandasWithState(
        ranked.top_bids, _bid_schema() + ", rank_number LONG, version LONG",
        ranked.TOP_BIDS_STATE, APPEND,
        GroupStateTimeout.NoTimeout)


def _q20(v: Views) -> DataFrame:
    b = v.bid.alias("B")
    a = v.auction.where("category = 10").alias("A")
    return b.join(a, _expr("B.auction = A.id")).select(
        "B.auction", "B.bidder", "B.price", "B.channel", "B.url",
        _expr("B.dateTime").alias("bid_dateTime"), _expr("B.extra").alias("bid_extra"),
        "A.itemName", "A.description", "A.initialBid", "A.reserve",
        _expr("A.dateTime").alias("auction_dateTime"), "A.expires", "A.seller", "A.category",
        _expr("A.extra").alias("auction_extra"))


def _bid_schema() -> str:
    return ("auction LONG, bidder LONG, price LONG, channel STRING, url STRING, "
            "dateTime TIMESTAMP, extra STRING")


def _expr(text: str):
    from pyspark.sql import functions as F

    return F.expr(text)


_RANKS_SQL = """count(*) AS total_bids,
       count(*) FILTER (WHERE price < 10000) AS rank1_bids,
       count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
       count(*) FILTER (WHERE price >= 1000000) AS rank3_bids"""

QUERIES: dict[str, Query] = {q.name: q for q in (
    Query("q3", "Local item suggestion", APPEND, _q3, """
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')""",
          "none: an inner join without a time bound, its state kept for ever, as Flink's",
          reads=("auction", "person")),
    Query("q4", "Average price for a category", APPEND, _q4, """
SELECT Q.category, window(Q.dateTime, '10 seconds').start AS starttime, AVG(Q.final)
FROM (SELECT MAX(B.price) AS final, A.category, A.dateTime
      FROM auction A, bid B
      WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
      GROUP BY A.id, A.category, A.dateTime) Q
GROUP BY Q.category, window(Q.dateTime, '10 seconds')""",
          "Flink keeps one running average a category over all auctions (a retracting "
          "aggregation); Spark's chained aggregations emit in append mode, so this one emits "
          "the average of the auctions opened in each 10-second window, once the watermark "
          "has passed them and their last bids",
          reads=("auction", "bid")),
    Query("q5", "Hot items", APPEND, _q5, """
SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime, AuctionBids.endtime
FROM (SELECT auction, count(*) AS num, w.start AS starttime, w.end AS endtime
      FROM (SELECT *, window(dateTime, '10 seconds', '2 seconds') AS w FROM bid)
      GROUP BY auction, w) AS AuctionBids
JOIN (SELECT max(num) AS maxn, starttime, endtime
      FROM (SELECT count(*) AS num, w.start AS starttime, w.end AS endtime
            FROM (SELECT *, window(dateTime, '10 seconds', '2 seconds') AS w FROM bid)
            GROUP BY auction, w)
      GROUP BY starttime, endtime) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn""",
          "Spark joins no aggregation's output with another's, so the second aggregation "
          "keeps each window's counts beside its maximum and emits those at the maximum; the "
          "output adds the window's bounds"),
    Query("q7", "Highest bid", APPEND, _q7, """
SELECT b.auction, b.price, b.bidder, b.dateTime, b.extra, window_end
FROM (SELECT max(struct(B.price, B.auction, B.bidder, B.dateTime, B.extra)) AS b,
             B1.dateTime AS window_end
      FROM bid B
      JOIN (SELECT MAX(price) AS maxprice, w.end AS dateTime
            FROM (SELECT *, window(dateTime, '10 seconds') AS w FROM bid)
            GROUP BY w) B1
      ON B.price = B1.maxprice
      WHERE B.dateTime >= B1.dateTime - INTERVAL 10 SECONDS AND B.dateTime < B1.dateTime
      GROUP BY B1.dateTime)""",
          "one aggregation keeps each window's highest bid, so of bids tied at the highest "
          "price one is emitted (the greatest by auction, bidder, time, padding) where Flink "
          "emits all; Flink's join takes a bid at the window's very end into both windows, "
          "the window here ends before it"),
    Query("q8", "Monitor new users", APPEND, _q8, """
SELECT P.id, P.name, P.starttime
FROM (SELECT id, name, w.start AS starttime, w.end AS endtime
      FROM (SELECT *, window(dateTime, '10 seconds') AS w FROM person)
      GROUP BY id, name, w) P
JOIN (SELECT seller, w.start AS starttime, w.end AS endtime
      FROM (SELECT *, window(dateTime, '10 seconds') AS w FROM auction)
      GROUP BY seller, w) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
          "the auctions' distinct sellers a window come from a deduplication, the people "
          "(one event each) need none; the join is on the window itself",
          reads=("person", "auction")),
    Query("q9", "Winning bids", APPEND, _q9, """
SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category,
       extra, auction, bidder, price, bid_dateTime, bid_extra
FROM (SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime,
             B.extra AS bid_extra,
             ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC,
                                B.bidder DESC, B.extra DESC) AS rownum
      FROM auction A, bid B
      WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
WHERE rownum <= 1""",
          "ROW_NUMBER's top 1 is an aggregation here, the maximum of (price, earliest time, "
          "bidder, padding) over an auction's bids, emitted when the auction's group closes; "
          "ties Flink leaves to chance are broken by bidder and padding",
          reads=("auction", "bid")),
    Query("q11", "User sessions", APPEND, _q11, """
SELECT bidder, count(*) AS bid_count, min(dateTime) AS starttime,
       max(dateTime) + INTERVAL 10 SECONDS AS endtime
FROM (SELECT bidder, dateTime, sum(new_session) OVER (PARTITION BY bidder ORDER BY dateTime
                                                      ROWS UNBOUNDED PRECEDING) AS session
      FROM (SELECT bidder, dateTime,
                   CASE WHEN dateTime < LAG(dateTime) OVER (PARTITION BY bidder
                                                             ORDER BY dateTime)
                                        + INTERVAL 10 SECONDS
                        THEN 0 ELSE 1 END AS new_session
            FROM bid))
GROUP BY bidder, session""",
          "none (the oracle finds the sessions with LAG, not with a session window)"),
    Query("q17", "Auction statistics report", APPEND, _q17, f"""
SELECT auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day,
       {_RANKS_SQL},
       min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price,
       sum(price) AS sum_price
FROM bid GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd')""",
          "the day is a one-day event-time window (UTC), emitted when the watermark passes "
          "it; Flink's group by the day's text updates for ever"),
    Query("q18", "Find last bid", APPEND, _q18, """
SELECT auction, bidder, price, channel, url, dateTime, extra
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction
                                   ORDER BY dateTime DESC, price DESC, channel DESC,
                                            url DESC, extra DESC) AS rank_number
      FROM bid)
WHERE rank_number <= 1""",
          "ROW_NUMBER through applyInPandasWithState: a key's last bid is emitted again, "
          "with a new version, when it changes; ties Flink leaves to chance are broken by "
          "the other columns",
          keys=("bidder", "auction"), needs_pandas=True),
    Query("q19", "Auction top-10 price", APPEND, _q19, """
SELECT * FROM
(SELECT auction, bidder, price, channel, url, dateTime, extra,
        ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, dateTime ASC,
                           bidder DESC, channel DESC, url DESC, extra DESC) AS rank_number
 FROM bid)
WHERE rank_number <= 10""",
          "ROW_NUMBER through applyInPandasWithState: an auction's ten rows are emitted "
          "again, with a new version, when they change; ties Flink leaves to chance are "
          "broken by the other columns",
          keys=("auction",), needs_pandas=True),
    Query("q20", "Expand bid with auction", APPEND, _q20, """
SELECT auction, bidder, price, channel, url, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
       itemName, description, initialBid, reserve, A.dateTime AS auction_dateTime, expires,
       seller, category, A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id WHERE A.category = 10""",
          "none: an inner join without a time bound, its state kept for ever, as Flink's",
          reads=("bid", "auction")),
)}

# The stateful queries Spark cannot run as Flink states them, and why (docs/nexmark.md shows
# Spark's error for each).
NOT_EXPRESSIBLE: dict[str, str] = {
    "q6": "an OVER window (the average of a seller's last ten prices): streaming Spark has no "
          "row-based window functions (Flink does not run it either, FLINK-19059)",
    "q12": "processing-time windows: Spark's windows are over a column's values; a column of "
           "the batch's processing time gives windows that depend on batch timing, with no "
           "result to check against",
    "q15": "distinct counts (count(DISTINCT bidder) ...): streaming Spark refuses distinct "
           "aggregations, and exact ones through deduplication need one stage per distinct "
           "column and a join of aggregations, which it does not run either",
    "q16": "as q15, per channel",
    "q23": "a three-way join on the bidder where auctions match by seller, a many-to-many "
           "join whose output grows with the square of the events: expressible, left out "
           "for now",
}

"""Nexmark's events as Spark columns of an event's index: generated inside the JVM, in a stream
or a batch, each a pure function of the seed and the index.

Where Nexmark draws from a random generator seeded per event (Beam's ``new Random(eventId)``),
draw ``k`` of event ``i`` here is ``xxhash64(seed, i, k)``. Ids, types and times follow Nexmark's
arithmetic exactly (a person, three auctions and 46 bids in every 50 events; bids and sellers
among the latest auctions and people, half of the bids on a hot auction, three quarters from a
hot bidder, three quarters of the auctions from a hot seller). Text is drawn too: 16 letters
(one a space where Nexmark's strings have spaces) from each 64-bit draw, so the plan carries
no pool of text and the JVM makes a bid's text from a few hashes.

One choice differs from nexmark/nexmark: its bid generator adds ``FIRST_PERSON_ID`` to the
bidder twice (nexmark/nexmark#30), so every bidder is 1000 above the person meant and joins on
the bidder rarely match. This generator follows Beam's, which adds it once.

Each event type has its own columns (Flink's ``person``, ``auction`` and ``bid`` views), made
only for the indexes of that type: one projection per type keeps each small enough for Spark
to compile. The index ``events`` (one past the last) is the end-of-stream event: every type's
rows include it, with a time far past every window (``is_end`` tells it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rockstate.nexmark import config as c

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from rockstate.nexmark.config import NexmarkConfig

# A draw's 16 hex digits become letters: the ten digits map to ten more letters, or to a
# space and nine letters where Nexmark's strings have spaces (about one character in 13
# there, one in 16 here).
_DIGITS = "0123456789"
_LETTERS = "qrstuvwxyz"
_WORDS = " rstuvwxyz"
TYPES = ("person", "auction", "bid")


def of_type(index: Column, kind: str, config: NexmarkConfig) -> Column:
    """Whether the event at ``index`` is a ``kind`` (or the end of the stream)."""
    from pyspark.sql import functions as F

    rem = F.pmod(index, F.lit(c.PROPORTION_DENOMINATOR))
    test = {"person": rem < c.PERSON_PROPORTION,
            "auction": (rem >= c.PERSON_PROPORTION)
            & (rem < c.PERSON_PROPORTION + c.AUCTION_PROPORTION),
            "bid": rem >= c.PERSON_PROPORTION + c.AUCTION_PROPORTION}[kind]
    return test | (index >= config.events)


def columns(index: Column, kind: str, config: NexmarkConfig) -> list[Column]:
    """The columns of the ``kind`` event at ``index`` (a LONG column of indexes of that
    type)."""
    from pyspark.sql import functions as F

    g = _Draws(index, config)
    millis = F.when(index >= config.events, F.lit(config.end_time_ms)) \
        .otherwise(g.time_ms(index) - g.delay_ms())
    time = F.timestamp_millis(millis)
    if kind == "person":
        return g.person(time)
    if kind == "auction":
        return g.auction(time, millis)
    return g.bid(time)


def batch_events(spark: SparkSession, kind: str, config: NexmarkConfig) -> DataFrame:
    """All events of one type as a batch DataFrame (no end-of-stream event): the oracle's
    input, or files to replay."""
    from pyspark.sql import functions as F

    index = F.col("id")
    return (spark.range(config.events).where(of_type(index, kind, config))
            .select(*columns(index, kind, config)))


class _Draws:
    """The draws of one event, each numbered as Nexmark's generators order them."""

    def __init__(self, index: Column, config: NexmarkConfig) -> None:
        self.i = index
        self.config = config

    # ---- draws ----

    def draw(self, k: int, salt: Column | None = None, block: int | None = None) -> Column:
        """Draw ``k`` of the event (or of ``salt``); ``block`` numbers a text's 64 bits."""
        from pyspark.sql import functions as F

        parts = [F.lit(self.config.seed), self.i if salt is None else salt, F.lit(k)]
        return F.xxhash64(*parts, *([] if block is None else [F.lit(block)]))

    def uniform(self, k: int, n: Column | int, salt: Column | None = None) -> Column:
        """A draw uniform in [0, n)."""
        from pyspark.sql import functions as F

        return F.pmod(self.draw(k, salt), n if not isinstance(n, int) else F.lit(n))

    def unit(self, k: int) -> Column:
        """A draw uniform in [0, 1)."""
        from pyspark.sql import functions as F

        return F.shiftrightunsigned(self.draw(k), 11).cast("double") / float(1 << 53)

    def text(self, k: int, length: Column | int, longest: int, salt: Column | None = None,
             spaces: bool = False) -> Column:
        """``length`` (at most ``longest``) drawn letters, 16 a draw (draws ``k`` and up)."""
        from pyspark.sql import functions as F

        parts = [F.lpad(F.hex(self.draw(k, salt, block=b)), 16, "0")
                 for b in range(-(-longest // 16))]
        letters = F.translate(F.concat(*parts) if len(parts) > 1 else parts[0], _DIGITS,
                              _WORDS if spaces else _LETTERS)
        n = F.lit(length) if isinstance(length, int) else length
        return F.substring(letters, 1, n.cast("int"))

    def string(self, k: int, max_length: int, salt: Column | None = None,
               underscores: bool = False) -> Column:
        """Nexmark's nextString: 3 to max_length - 1 letters and spaces, trimmed (or with
        underscores for spaces, as its URLs have)."""
        from pyspark.sql import functions as F

        length = self.uniform(k, max_length - 3, salt) + 3
        text = F.trim(self.text(k + 100, length, max_length, salt, spaces=True))
        return F.translate(text, " ", "_") if underscores else text

    def extra(self, k: int, current: Column, average: int, least: int) -> Column:
        """Nexmark's nextExtra: padding that brings the event to ``average`` bytes on average
        (its size within 20% of the gap; ``least`` is the smallest ``current`` can be)."""
        from pyspark.sql import functions as F

        gap = F.greatest(F.lit(average) - current, F.lit(0))
        delta = F.round(gap * 0.2).cast("long")
        size = gap - delta + F.when(delta == 0, F.lit(0)).otherwise(
            self.uniform(k, F.greatest(delta * 2, F.lit(1))))
        longest = (average - least) * 6 // 5 + 1
        return F.when(current > average, F.lit("")).otherwise(
            self.text(k + 100, size, longest))

    def price(self, k: int) -> Column:
        """Nexmark's nextPrice: log-uniform over [100, 10^8)."""
        from pyspark.sql import functions as F

        return F.round(F.pow(F.lit(10.0), self.unit(k) * 6.0) * 100.0).cast("long")

    # ---- ids and times ----

    def time_ms(self, index: Column) -> Column:
        from pyspark.sql import functions as F

        return F.lit(self.config.base_time_ms) + _div(index * 1000, self.config.event_rate)

    def delay_ms(self) -> Column:
        from pyspark.sql import functions as F

        delayed = self.unit(90) < self.config.delayed_share
        return F.when(delayed, self.uniform(91, max(self.config.max_delay_ms, 1))) \
            .otherwise(F.lit(0))

    def last_person(self) -> Column:
        """Nexmark's lastBase0PersonId."""
        from pyspark.sql import functions as F

        epoch = _div(self.i, c.PROPORTION_DENOMINATOR)
        offset = F.least(F.pmod(self.i, F.lit(c.PROPORTION_DENOMINATOR)),
                         F.lit(c.PERSON_PROPORTION - 1))
        return epoch * c.PERSON_PROPORTION + offset

    def last_auction(self) -> Column:
        """Nexmark's lastBase0AuctionId."""
        from pyspark.sql import functions as F

        epoch = _div(self.i, c.PROPORTION_DENOMINATOR)
        offset = F.pmod(self.i, F.lit(c.PROPORTION_DENOMINATOR))
        p, a = c.PERSON_PROPORTION, c.AUCTION_PROPORTION
        return (F.when(offset < p, (epoch - 1) * a + (a - 1))
                .when(offset >= p + a, epoch * a + (a - 1))
                .otherwise(epoch * a + offset - p))

    def next_person(self, k: int) -> Column:
        """Nexmark's nextBase0PersonId: one of the latest active people, or a few ids ahead."""
        from pyspark.sql import functions as F

        people = self.last_person() + 1
        active = F.least(people, F.lit(self.config.num_active_people))
        return people - active + self.uniform(k, active + c.PERSON_ID_LEAD)

    def next_auction(self, k: int) -> Column:
        """Nexmark's nextBase0AuctionId: one of the auctions in flight, or a few ids ahead."""
        from pyspark.sql import functions as F

        latest = self.last_auction()
        lowest = F.greatest(latest - self.config.num_in_flight_auctions, F.lit(0))
        return lowest + self.uniform(k, latest - lowest + 1 + c.AUCTION_ID_LEAD)

    # ---- events ----

    def person(self, time: Column) -> list[Column]:
        from pyspark.sql import functions as F

        name = F.concat_ws(" ", _pick(c.FIRST_NAMES, self.uniform(1, len(c.FIRST_NAMES))),
                           _pick(c.LAST_NAMES, self.uniform(2, len(c.LAST_NAMES))))
        email = F.concat(self.string(3, 7), F.lit("@"), self.string(4, 5), F.lit(".com"))
        card = F.format_string("%04d %04d %04d %04d", *(self.uniform(k, 10_000)
                                                          for k in (5, 6, 7, 8)))
        city = _pick(c.US_CITIES, self.uniform(9, len(c.US_CITIES)))
        state = _pick(c.US_STATES, self.uniform(10, len(c.US_STATES)))
        size = (F.lit(8) + F.length(name) + F.length(email) + F.length(card) + F.length(city)
                + F.length(state))
        return [
            (self.last_person() + c.FIRST_PERSON_ID).alias("id"), name.alias("name"),
            email.alias("emailAddress"), card.alias("creditCard"), city.alias("city"),
            state.alias("state"), time.alias("dateTime"),
            self.extra(11, size, self.config.avg_person_bytes, 40).alias("extra")]

    def auction(self, time: Column, millis: Column) -> list[Column]:
        from pyspark.sql import functions as F

        hot = self.uniform(1, self.config.hot_sellers_ratio) > 0
        seller = F.when(hot, _div(self.last_person(), c.HOT_BATCH) * c.HOT_BATCH) \
            .otherwise(self.next_person(2))
        initial = self.price(4)
        # The horizon: the event time that the next num_in_flight auctions' events take.
        horizon = self.time_ms(self.i + self.config.auction_horizon_events) - self.time_ms(self.i)
        length = self.uniform(5, F.greatest(horizon * 2, F.lit(1))) + 1
        name = self.string(6, 20)
        description = self.string(7, 100)
        size = F.lit(8 + 5 * 8) + F.length(name) + F.length(description)
        return [
            (self.last_auction() + c.FIRST_AUCTION_ID).alias("id"), name.alias("itemName"),
            description.alias("description"), initial.alias("initialBid"),
            (initial + self.price(8)).alias("reserve"), time.alias("dateTime"),
            F.timestamp_millis(millis + length).alias("expires"),
            (seller + c.FIRST_PERSON_ID).alias("seller"),
            (self.uniform(3, c.NUM_CATEGORIES) + c.FIRST_CATEGORY_ID).alias("category"),
            self.extra(9, size, self.config.avg_auction_bytes, 48).alias("extra")]

    def bid(self, time: Column) -> list[Column]:
        from pyspark.sql import functions as F

        hot_auction = self.uniform(1, self.config.hot_auction_ratio) > 0
        auction = F.when(hot_auction, _div(self.last_auction(), c.HOT_BATCH) * c.HOT_BATCH) \
            .otherwise(self.next_auction(2))
        hot_bidder = self.uniform(3, self.config.hot_bidders_ratio) > 0
        bidder = F.when(hot_bidder, _div(self.last_person(), c.HOT_BATCH) * c.HOT_BATCH + 1) \
            .otherwise(self.next_person(4))
        hot_channel = self.uniform(6, 2) > 0
        hot = self.uniform(7, len(c.HOT_CHANNELS))
        channel = self.uniform(8, c.NUM_CHANNELS)
        return [
            (auction + c.FIRST_AUCTION_ID).alias("auction"),
            (bidder + c.FIRST_PERSON_ID).alias("bidder"), self.price(5).alias("price"),
            F.when(hot_channel, _pick(c.HOT_CHANNELS, hot))
            .otherwise(F.concat(F.lit("channel-"), channel.cast("string"))).alias("channel"),
            F.when(hot_channel, self.channel_url(hot - len(c.HOT_CHANNELS), hot=True))
            .otherwise(self.channel_url(channel)).alias("url"),
            time.alias("dateTime"),
            self.extra(9, F.lit(32), self.config.avg_bid_bytes, 32).alias("extra")]

    def channel_url(self, channel: Column, hot: bool = False) -> Column:
        """A channel's URL: the same for every bid on it (drawn from the channel, not the bid);
        nine in ten of the others carry ``&channel_id=`` and the channel's bits reversed, as
        Nexmark's (the four hot channels' do not)."""
        from pyspark.sql import functions as F

        parts = [self.string(20 + n, 5, salt=channel, underscores=True) for n in range(3)]
        reversed_bits = F.conv(F.reverse(F.lpad(F.bin(F.pmod(channel, F.lit(1 << 32))), 32,
                                                "0")), 2, 10).cast("long")
        signed = F.when(reversed_bits >= 1 << 31, F.lit(1 << 32) - reversed_bits) \
            .otherwise(reversed_bits)
        with_id = F.lit(False) if hot else self.uniform(23, 10, salt=channel) > 0
        return F.concat(F.lit("https://www.nexmark.com/"), parts[0], F.lit("/"), parts[1],
                        F.lit("/"), parts[2], F.lit("/item.htm?query=1"),
                        F.when(with_id, F.concat(F.lit("&channel_id="), signed.cast("string")))
                        .otherwise(F.lit("")))


def _div(a: Column, b: int) -> Column:
    """``a div b``, truncating as Java's (Nexmark's arithmetic); Column has no ``//``."""
    from pyspark.sql import functions as F

    return ((a - a % F.lit(b)) / F.lit(b)).cast("long")


def _pick(values: tuple[str, ...], position: Column) -> Column:
    from pyspark.sql import functions as F

    return F.element_at(F.array(*(F.lit(v) for v in values)), (position + 1).cast("int"))

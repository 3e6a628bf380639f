"""The generator's settings: Nexmark's model, with each event a pure function of the seed and
its index."""

from __future__ import annotations

from dataclasses import dataclass

# Nexmark's constants (nexmark/nexmark's GeneratorConfig and model generators, Beam's alike).
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_PROPORTION = 1
AUCTION_PROPORTION = 3
BID_PROPORTION = 46
PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
# "Hot" ids are the first of the latest batch of this many (a seller, an auction, a bidder).
HOT_BATCH = 100
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
NUM_CHANNELS = 10_000
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah",
               "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones",
              "Noris")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
             "Seattle", "Kent", "Cheyenne")
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")

# The event types, as Flink's Nexmark table numbers them; END closes the stream (below).
PERSON, AUCTION, BID, END = 0, 1, 2, 3
# Beam's BASE_TIME: 2015-07-15T00:00:00Z.
BASE_TIME_MS = 1_436_918_400_000
# The watermark of every view (Flink's DDL: dateTime - INTERVAL '4' SECOND).
WATERMARK_DELAY_MS = 4_000
# The end-of-stream event lies this far past the last event: past every window the queries
# use (a day, q17's), so that its watermark closes them all and a bounded run emits everything.
END_AFTER_MS = 2 * 86_400_000


@dataclass(frozen=True)
class NexmarkConfig:
    """What decides the events: the same config and index give the same event on any machine,
    in a stream or a batch, so any range can be regenerated and checked.

    ``events`` is the stream's length. ``event_rate`` spaces the events' times (events per
    second of event time, Nexmark's ``firstEventRate``; 10,000 is its default), not how fast
    they are processed. A share ``delayed_share`` of events carries a time up to
    ``max_delay_ms`` before its place in the stream (Nexmark's ``probDelayedEvent`` and
    ``occasionalDelaySec``), kept under the watermark's 4 s so no event is dropped as late and
    every query's output has a batch meaning.
    """

    events: int
    seed: int = 0
    event_rate: int = 10_000
    hot_auction_ratio: int = 2
    hot_bidders_ratio: int = 4
    hot_sellers_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    delayed_share: float = 0.1
    max_delay_ms: int = 3_000
    base_time_ms: int = BASE_TIME_MS

    def __post_init__(self) -> None:
        if self.events < 1:
            raise ValueError(f"events must be at least 1, not {self.events}")
        if self.event_rate < 1:
            raise ValueError(f"event_rate must be at least 1 event a second, not "
                             f"{self.event_rate}")
        if not 0 <= self.max_delay_ms < WATERMARK_DELAY_MS:
            raise ValueError(f"max_delay_ms must be under the watermark's {WATERMARK_DELAY_MS} "
                             f"ms (a later event would be dropped as late), not "
                             f"{self.max_delay_ms}")
        if not 0 <= self.delayed_share <= 1:
            raise ValueError(f"delayed_share must be within [0, 1], not {self.delayed_share}")

    def time_ms(self, index: int) -> int:
        """Event ``index``'s place in event time (before any delay)."""
        return self.base_time_ms + index * 1000 // self.event_rate

    @property
    def end_time_ms(self) -> int:
        """The end-of-stream event's time."""
        return self.time_ms(self.events) + END_AFTER_MS

    @property
    def auction_horizon_ms(self) -> int:
        """An auction's mean length: the event time that ``auction_horizon_events`` take
        (Nexmark's ``nextAuctionLengthMs``)."""
        return self.auction_horizon_events * 1000 // self.event_rate

    @property
    def auction_horizon_events(self) -> int:
        """The events that ``num_in_flight_auctions`` auctions come with."""
        return self.num_in_flight_auctions * PROPORTION_DENOMINATOR // AUCTION_PROPORTION

    @property
    def max_auction_ms(self) -> int:
        """The longest an auction lasts: lengths are uniform in [1, 2 x horizon], and an
        event's horizon may be a millisecond longer than the mean by rounding."""
        return 2 * (self.auction_horizon_ms + 1)

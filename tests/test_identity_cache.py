"""Identity cache and tracker: thresholds per metric, video-time lifetime, eviction order, pose filter."""

from __future__ import annotations

import json

import numpy as np

from facefusion_ui.faces.face import Face
from facefusion_ui.faces.identity_cache import IdentityCache
from facefusion_ui.faces.tracker import FRONTAL_YAW, IdentityTracker

KPS = np.array([[30, 40], [70, 40], [50, 60], [35, 80], [65, 80]], dtype=np.float32)


def face(x: float, yaw: float = 0.0, width: float = 100.0) -> Face:
    bbox = np.array([x, 0, x + width, width], dtype=np.float32)
    return Face(bbox=bbox, score=0.9, kps=KPS + np.array([x, 0], dtype=np.float32), detector="test", yaw=yaw)


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    normed: np.ndarray = vector / np.linalg.norm(vector)
    return normed


def test_threshold_is_in_the_recognizers_own_metric() -> None:
    cosine = IdentityCache("cosine", threshold=0.3, limit=10, lifetime=10)
    known = cosine.add(unit(1, 0, 0), now=0, yaw=0, pitch=0)
    assert cosine.lookup(unit(1, 0.5, 0), now=1) is known  # cosine distance 0.106
    assert cosine.lookup(unit(1, 1.2, 0), now=1) is None  # 0.36
    euclidean = IdentityCache("euclidean", threshold=0.6, limit=10, lifetime=10)
    dlib_like = euclidean.add(np.array([0.1, 0.2, 0.3], np.float32), now=0, yaw=0, pitch=0)
    assert euclidean.lookup(np.array([0.1, 0.2, 0.8], np.float32), now=0) is dlib_like  # L2 0.5
    assert euclidean.lookup(np.array([0.1, 0.9, 0.8], np.float32), now=0) is None  # L2 0.86
    assert euclidean.stats.to_json() == {
        "lookups": 2,
        "hits": 1,
        "misses": 1,
        "evictions": 0,
        "expirations": 0,
        "hit_rate": 0.5,
    }


def test_lifetime_counts_video_seconds_not_wall_clock() -> None:
    cache = IdentityCache("cosine", 0.3, limit=10, lifetime=5.0)
    identity = cache.add(unit(1, 0), now=10.0, yaw=0, pitch=0)
    assert cache.lookup(unit(1, 0), now=14.9) is identity  # refreshes last_seen to 14.9
    assert cache.lookup(unit(1, 0), now=19.8) is identity
    assert cache.lookup(unit(1, 0), now=25.0) is None
    assert cache.stats.expirations == 1 and len(cache) == 0


def test_limit_evicts_the_least_recently_seen() -> None:
    cache = IdentityCache("cosine", 0.1, limit=2, lifetime=100)
    first = cache.add(unit(1, 0, 0), now=0, yaw=0, pitch=0)
    second = cache.add(unit(0, 1, 0), now=1, yaw=0, pitch=0)
    assert cache.lookup(unit(1, 0, 0), now=2) is first  # first is now the most recent
    cache.add(unit(0, 0, 1), now=3, yaw=0, pitch=0)
    ids = [identity.id for identity in cache.identities()]
    assert second.id not in ids and first.id in ids and cache.stats.evictions == 1


def test_tracked_faces_skip_the_recognizer_and_are_verified_periodically() -> None:
    cache = IdentityCache("cosine", 0.3, limit=10, lifetime=100)
    tracker = IdentityTracker(cache, verify_every=10)
    calls: list[float] = []

    def embed(seen: Face) -> np.ndarray:
        calls.append(float(seen.bbox[0]))
        return unit(1, 0)

    for index in range(25):
        resolved = tracker.resolve([face(100 + index)], index, index / 25, embed)
        assert resolved[0][1] is not None and resolved[0][1].id == 1
        assert resolved[0][0].embedding is not None
    assert len(calls) == 3  # first sight, then re-verified at frames 10 and 20
    assert tracker.stats.tracked == 22 and tracker.stats.verified == 2


def test_profile_faces_keep_the_tracked_identity() -> None:
    cache = IdentityCache("cosine", 0.3, limit=10, lifetime=100)
    tracker = IdentityTracker(cache, verify_every=3)
    embeddings = {True: unit(1, 0), False: unit(0, 1)}  # a profile would look like someone else

    def embed(seen: Face) -> np.ndarray:
        return embeddings[abs(seen.yaw) <= FRONTAL_YAW]

    tracker.resolve([face(100)], 0, 0.0, embed)
    for index in range(1, 8):  # the person turns away and stays turned, even past re-verification
        resolved = tracker.resolve([face(100 + index, yaw=70)], index, index / 25, embed)
        assert resolved[0][1] is not None and resolved[0][1].id == 1
    assert len(cache) == 1 and tracker.stats.profiles_kept == 7
    untracked = tracker.resolve([face(600, yaw=80)], 20, 1.0, embed)  # a new profile: no identity invented
    assert untracked[0][1] is None and len(cache) == 1


def test_a_jump_breaks_the_track() -> None:
    cache = IdentityCache("cosine", 0.3, limit=10, lifetime=100)
    tracker = IdentityTracker(cache)
    calls: list[int] = []

    def embed(seen: Face) -> np.ndarray:
        calls.append(1)
        return unit(1, 0)

    tracker.resolve([face(100)], 0, 0.0, embed)
    tracker.resolve([face(400)], 1, 0.04, embed)  # no overlap: recognise
    tracker.resolve([face(401)], 3, 0.12, embed)  # a frame gap: recognise
    assert len(calls) == 3 and cache.stats.hits == 2


def test_cache_and_tracks_round_trip_through_json_exactly() -> None:
    cache = IdentityCache("cosine", 0.3, limit=3, lifetime=100)
    tracker = IdentityTracker(cache)

    def distinct(seen: Face) -> np.ndarray:  # a different person at each place
        return unit(*np.eye(6)[int(seen.bbox[0]) // 100 % 6])

    for index, x in enumerate((100.0, 300.0, 500.0)):
        tracker.resolve([face(x), face(x + 700)], index, index / 25, distinct)
    saved = json.loads(json.dumps(tracker.to_json()))
    restored = IdentityTracker(IdentityCache("cosine", 0.3, limit=3, lifetime=100))
    restored.load_json(saved)
    assert len(cache) == 3 and cache.stats.evictions == 3
    assert [i.id for i in restored.cache.identities()] == [i.id for i in cache.identities()]
    for got, want in zip(restored.cache.identities(), cache.identities(), strict=True):
        assert np.array_equal(got.embedding, want.embedding) and got.last_seen == want.last_seen
    assert [(t.identity_id, t.frame_index) for t in restored.tracks] == [
        (t.identity_id, t.frame_index) for t in tracker.tracks
    ]
    assert all(np.array_equal(a.face.kps, b.face.kps) for a, b in zip(restored.tracks, tracker.tracks, strict=True))
    # the next identity gets the id the uninterrupted cache would give it
    assert restored.cache.add(unit(9, 9, 9), 5, 0, 0).id == cache.add(unit(9, 9, 9), 5, 0, 0).id
    smaller = IdentityCache("cosine", 0.3, limit=2, lifetime=100)
    smaller.load_json(saved["cache"])
    assert len(smaller) == 2  # the limit still holds: the most recently seen are kept

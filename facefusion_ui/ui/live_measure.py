"""The Live tab's camera-to-screen measure, in the page itself (a script in the page's head).

The webcam image of Gradio grabs a camera frame off its <video> onto a canvas and encodes it with
``canvas.toDataURL("image/jpeg")``; from the second frame on, the frame goes to the server in a POST to
``…/stream/<event id>``. The script notes, for each frame the <video> presents, the time the camera
captured it (``requestVideoFrameCallback``'s ``captureTime``, which Chrome gives for a camera's frames, in
``performance.now()``'s time). Each grab is stamped with its own time, kept beside the capture time of
the frame last presented (the grab's own time where none is known) for the last 16 grabs; the stamp is
written into the stream's second input (``#live-sent``, a hidden number) as the POST carrying that very
frame leaves (the frame's data URL is compared, so a stamp never goes with another frame). The server
puts the stamp back on the swapped frame's <img> (``data-sent``); when it changes the script waits for the
picture to be decoded (``img.decode()``) and for the paint after the next animation frame
(``requestAnimationFrame``, then a task), and keeps ``painted - captured`` for the last ``MEASURE_WINDOW``
frames and the paint times of the last 2 s. The read-out (``#live-screen-stats``) shows their median,
95th percentile and the frames per second painted, and where its times start. Not covered: the device's
own delay before it stamps a frame.

The same script holds ``IN_FLIGHT`` frames in flight end to end: Gradio's webcam grabs and posts a frame
every ``stream_every`` whatever the server's progress, so while that many frames are out (until a swapped
frame is back, which frees it and any sent before it; ``HOLD_MS`` at most each) the webcam's <video>
reports no width, which makes the grab skip, and a post of a frame already out is answered in the page.
The <video> also reports no width until the camera has presented a frame not grabbed yet, so no camera
frame goes twice. The camera's grabs are encoded at ``UPLOAD_QUALITY``; while swapped frames come, the
camera's block carries ``STREAMING_CLASS`` (its own picture then not drawn). See docs/ARCHITECTURE.md
(Live mode). Bounded structures only."""

from __future__ import annotations

MEASURE_WINDOW = 200
"""Camera-to-screen latencies kept for the read-out's percentiles (the last this many frames)."""

HOLD_MS = 1000
"""A frame sent and not back (its swapped frame not shown) holds the next one back this long at most: the
server may answer without a frame (before Start)."""

IN_FLIGHT = 2
"""Frames out at once end to end (sent, their swapped frames not back): with two, the browser grabs,
encodes and sends the next frame and shows the last one while the server swaps, instead of each side
waiting for the other; the server takes the newest frame posted, so a third would replace one unswapped."""

UPLOAD_QUALITY = 0.8
"""The JPEG quality of the camera's frames sent (Gradio's webcam leaves the browser's default, 0.92): a
smaller post to send and decode; the swap's input, so not much lower."""

STREAMING_CLASS = "live-streaming"
"""Put on the camera's block while swapped frames come (until none for ``HOLD_MS``): the page's CSS then
does not draw the camera's own picture, which the browser would otherwise draw at the camera's rate beside
the swapped frames (``ui.app.PAGE_CSS``)."""

SCREEN_STATS_ID = "live-screen-stats"
SCREEN_STATS_WAITING = "camera to screen: waiting for swapped frames"

LIVE_MEASURE_SCRIPT = """<script>
(() => {
  const WINDOW = __WINDOW__, RATE_MS = 2000, GRABS = 16, HOLD_MS = __HOLD_MS__, READOUT_ID = "__READOUT_ID__";
  const IN_FLIGHT = __IN_FLIGHT__, UPLOAD_QUALITY = __UPLOAD_QUALITY__, STREAMING_CLASS = "__STREAMING_CLASS__";
  const state = { camera: null, video: null, grabbed: null, out: [], started: new Map(), from: "" };
  Object.assign(state, { latencies: [], painted: [], frames: 0, lastSent: 0, presented: 0, grabbedAt: -1, idle: 0 });
  const waiting = () => {
    // the frames out (sent, their swapped frames not back), each for HOLD_MS at most
    const now = performance.now();
    while (state.out.length > 0 && now - state.out[0].since >= HOLD_MS) state.out.shift();
    return state.out.length >= IN_FLIGHT;
  };
  // a grab only of a camera frame not grabbed before (when the <video> tells its frames)
  const stale = () => state.presented > 0 && state.presented === state.grabbedAt;
  const follow = (video) => {
    // the capture time of each camera frame the <video> presents (Chrome gives it for a camera's frames)
    if (!video || video === state.video || !video.requestVideoFrameCallback) return;
    state.video = video;
    // Gradio's webcam grabs only from a <video> with a size: none while a frame is out, so the grab, its
    // encoding and the page's whole update for a stream event are skipped until the frame is back
    const width = Object.getOwnPropertyDescriptor(HTMLVideoElement.prototype, "videoWidth").get;
    const gated = { configurable: true, get() { return waiting() || stale() ? 0 : width.call(this); } };
    Object.defineProperty(video, "videoWidth", gated);
    const presented = (now, frame) => {
      state.camera = Number.isFinite(frame.captureTime) ? frame.captureTime : null;
      state.presented += 1;
      if (state.video === video) video.requestVideoFrameCallback(presented);
    };
    video.requestVideoFrameCallback(presented);
  };
  const encode = HTMLCanvasElement.prototype.toDataURL;
  HTMLCanvasElement.prototype.toDataURL = function (type, ...rest) {
    // while frames are out, the last one sent is given again (no encoding); its POST is then not sent
    if (type === "image/jpeg" && waiting()) return state.out[state.out.length - 1].url;
    const at = Math.round(performance.now() * 10) / 10;  // 0.1 ms: the same number once back
    // the camera's grab (Gradio's asks for none): a smaller JPEG to send, to decode on the server
    const quality = type === "image/jpeg" && rest.length === 0 && state.video !== null ? [UPLOAD_QUALITY] : rest;
    const url = encode.call(this, type, ...quality);
    // the frame's capture by the camera when known (and plausible), else this grab
    const captured = state.camera !== null && state.camera <= at && at - state.camera < 1000 ? state.camera : null;
    if (type === "image/jpeg") {
      state.grabbed = { url, at };
      state.grabbedAt = state.presented;
      state.started.set(at, captured === null ? at : captured);
      if (state.started.size > GRABS) state.started.delete(state.started.keys().next().value);
      state.from = captured === null ? "the grab off the video" : "the camera's capture";
    }
    return url;
  };
  const send = window.fetch;
  window.fetch = function (resource, options) {
    const address = typeof resource === "string" ? resource : String(resource && resource.url);
    if (/\\/stream\\/[^/]+$/.test(address) && options && typeof options.body === "string" && state.grabbed) {
      try {
        const body = JSON.parse(options.body);
        const frame = Array.isArray(body.data) ? body.data[0] : null;
        if (frame && state.out.some((out) => out.url === frame.url)) {
          return Promise.resolve(new Response(JSON.stringify({ msg: "success" }), { status: 200 }));
        }
        if (frame && frame.url === state.grabbed.url && body.data.length > 1) {
          body.data[1] = state.grabbed.at;
          options = { ...options, body: JSON.stringify(body) };
          state.out.push({ url: frame.url, at: state.grabbed.at, since: performance.now() });
        }
      } catch (error) { /* not a live frame: sent as it is */ }
    }
    return send.call(this, resource, options);
  };
  const percentile = (sorted, fraction) => sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)];
  const show = () => {
    const readout = document.getElementById(READOUT_ID);
    if (!readout || state.latencies.length === 0) return;
    const sorted = [...state.latencies].sort((a, b) => a - b);
    const span = state.painted.length > 1 ? state.painted[state.painted.length - 1] - state.painted[0] : 0;
    const fps = span > 0 ? (state.painted.length - 1) * 1000 / span : 0;
    readout.textContent = `camera to screen median ${percentile(sorted, 0.5).toFixed(0)} ms, ` +
      `p95 ${percentile(sorted, 0.95).toFixed(0)} ms · ${fps.toFixed(1)} fps on screen · ` +
      `${state.frames} frames measured (last ${sorted.length}, from ${state.from})`;
  };
  const streaming = (on) => {
    // while swapped frames come, the camera's own picture is not drawn (the swapped one shows the camera)
    const camera = document.getElementById("live-camera");
    if (camera) camera.classList.toggle(STREAMING_CLASS, on);
    clearTimeout(state.idle);
    if (on) state.idle = setTimeout(() => streaming(false), HOLD_MS);
  };
  const painted = (sent) => {
    const now = performance.now();
    streaming(true);
    state.latencies.push(now - (state.started.get(sent) ?? sent));
    if (state.latencies.length > WINDOW) state.latencies.shift();
    state.painted.push(now);
    while (state.painted.length > 0 && state.painted[0] < now - RATE_MS) state.painted.shift();
    state.frames += 1;
    show();
  };
  const look = () => {
    follow(document.querySelector("#live-camera video"));
    // Gradio's HTML updates the <img> in place (its src and data-sent change): a frame is a new data-sent
    const image = document.getElementById("live-frame");
    const sent = image ? Number(image.dataset.sent) : 0;
    if (!(sent > 0) || sent === state.lastSent) return;
    state.lastSent = sent;
    state.out = state.out.filter((out) => out.at > sent);  // back (and any sent before it): the next may go
    // decoded, then handed to the next paint; refused when the src changed again first: never on screen
    image.decode().then(() => requestAnimationFrame(() => setTimeout(() => painted(sent), 0)), () => {});
  };
  const changes = { childList: true, subtree: true, attributeFilter: ["data-sent"] };
  const watch = () => new MutationObserver(look).observe(document.body, changes);
  if (document.body) watch(); else document.addEventListener("DOMContentLoaded", watch);
})();
</script>"""
LIVE_MEASURE_HEAD = (
    LIVE_MEASURE_SCRIPT.replace("__WINDOW__", str(MEASURE_WINDOW))
    .replace("__READOUT_ID__", SCREEN_STATS_ID)
    .replace("__HOLD_MS__", str(HOLD_MS))
    .replace("__IN_FLIGHT__", str(IN_FLIGHT))
    .replace("__UPLOAD_QUALITY__", str(UPLOAD_QUALITY))
    .replace("__STREAMING_CLASS__", STREAMING_CLASS)
)
"""The script (see the module's docstring); ``ui.app`` puts it in the page's head."""

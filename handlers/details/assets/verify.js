// lensgate details page: the reader's browser verifies the receipt (and the runner's
// observation beside it) itself. It fetches the exact envelope bytes offered for download and
// the public keys the App publishes, checks the DSSE signature with WebCrypto Ed25519 and
// recomputes the digests. Nothing the server says about the result is used; every line written
// here is what this browser computed. A receipt is checked only against receipt keys and an
// observation only against witness keys, as the key set names their roles.
(function () {
  "use strict";

  var PAYLOAD_TYPE = "application/vnd.in-toto+json";

  function bytesFromBase64(s) {
    var bin = atob(s);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function bytesFromBase64URL(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    return bytesFromBase64(s);
  }

  function hex(buf) {
    var b = new Uint8Array(buf), s = "";
    for (var i = 0; i < b.length; i++) s += (b[i] < 16 ? "0" : "") + b[i].toString(16);
    return s;
  }

  function concat(a, b) {
    var out = new Uint8Array(a.length + b.length);
    out.set(a, 0);
    out.set(b, a.length);
    return out;
  }

  // DSSE pre-authentication encoding: "DSSEv1 " len(type) " " type " " len(body) " " body.
  function pae(type, body) {
    var enc = new TextEncoder();
    var t = enc.encode(type);
    var head = enc.encode("DSSEv1 " + t.length + " " + type + " " + body.length + " ");
    return concat(head, body);
  }

  async function sha256(bytes) {
    return hex(await crypto.subtle.digest("SHA-256", bytes));
  }

  async function fetchBytes(url) {
    var resp = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!resp.ok) throw new Error("GET " + url + " answered " + resp.status);
    return new Uint8Array(await resp.arrayBuffer());
  }

  async function verify(box) {
    var lines = [];
    var ok = true;
    var envBytes = await fetchBytes(box.dataset.receipt);
    var keysResp = await fetch(box.dataset.keys, { credentials: "same-origin", cache: "no-store" });
    if (!keysResp.ok) throw new Error("the published keys could not be read (" + keysResp.status + ")");
    var role = box.dataset.role || "receipt";
    var keys = ((await keysResp.json()).keys || []).filter(function (k) {
      return (k.role || "receipt") === role;
    });

    lines.push("Envelope file digest computed by your browser: " + (await sha256(envBytes)) + ".");
    var env;
    try {
      env = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(envBytes));
    } catch (e) {
      return { ok: false, lines: lines.concat(["The envelope is not valid JSON: " + e.message + "."]) };
    }
    if (env.payloadType !== PAYLOAD_TYPE) {
      ok = false;
      lines.push("Payload type is " + JSON.stringify(env.payloadType) + ", not " + PAYLOAD_TYPE + ".");
    }
    var payload;
    try {
      payload = bytesFromBase64(String(env.payload));
    } catch (e) {
      return { ok: false, lines: lines.concat(["The payload is not base64."]) };
    }
    var digest = await sha256(payload);
    if (digest === box.dataset.digest) {
      lines.push("Payload digest computed by your browser: sha256:" + digest + ", the same as this page shows.");
    } else {
      ok = false;
      lines.push("Payload digest computed by your browser: sha256:" + digest + ", NOT the sha256:" + box.dataset.digest + " this page shows.");
    }
    var sigs = Array.isArray(env.signatures) ? env.signatures : [];
    if (sigs.length === 0) {
      return { ok: false, lines: lines.concat(["The envelope carries no signature."]) };
    }
    var message = pae(String(env.payloadType), payload);
    var verifiedBy = "";
    for (var i = 0; i < sigs.length && !verifiedBy; i++) {
      var sig;
      try {
        sig = bytesFromBase64(String(sigs[i].sig));
      } catch (e) {
        continue;
      }
      for (var j = 0; j < keys.length && !verifiedBy; j++) {
        if (keys[j].kty !== "OKP" || keys[j].crv !== "Ed25519") continue;
        var key = await crypto.subtle.importKey("raw", bytesFromBase64URL(keys[j].x), { name: "Ed25519" }, false, ["verify"]);
        if (await crypto.subtle.verify({ name: "Ed25519" }, key, sig, message)) verifiedBy = keys[j].hex || keys[j].kid;
      }
    }
    if (verifiedBy) {
      lines.push("Ed25519 signature checked by your browser: valid, with the published " + role + " key " + verifiedBy + ".");
    } else {
      ok = false;
      lines.push("Ed25519 signature checked by your browser: NOT valid for any of the " + keys.length + " published " + role + " keys.");
    }
    return { ok: ok, lines: lines };
  }

  // Icons as inline SVG, like the page's badges: no font needs a glyph for them.
  var ICONS = { ok: "M2.5 8.5l3.5 3.5 7.5-8", fail: "M3.5 3.5l9 9M12.5 3.5l-9 9" };

  function icon(d) {
    var ns = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "icon");
    svg.setAttribute("viewBox", "0 0 16 16");
    svg.setAttribute("width", "16");
    svg.setAttribute("height", "16");
    svg.setAttribute("aria-hidden", "true");
    var p = document.createElementNS(ns, "path");
    p.setAttribute("d", d);
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", "currentColor");
    p.setAttribute("stroke-width", "2.2");
    svg.appendChild(p);
    return svg;
  }

  function show(box, state, headline, lines) {
    var prefix = box.dataset.prefix || "browser";
    box.dataset.state = state;
    var out = document.getElementById(prefix + "-result");
    out.textContent = headline;
    var path = ICONS[state];
    if (path) out.insertBefore(icon(path), out.firstChild);
    var old = document.getElementById(prefix + "-lines");
    if (old) old.remove();
    if (lines && lines.length) {
      var ul = document.createElement("ul");
      ul.id = prefix + "-lines";
      lines.forEach(function (l) {
        var li = document.createElement("li");
        li.textContent = l;
        ul.appendChild(li);
      });
      box.appendChild(ul);
    }
  }

  function start(box) {
    var what = box.dataset.what || "receipt";
    if (!window.crypto || !crypto.subtle) {
      show(box, "unsupported", "Your browser offers no WebCrypto here (it needs https); download the " + what + " and use lensgate receipt verify.", []);
      return;
    }
    show(box, "running", "Your browser is checking the " + what + "…", []);
    verify(box).then(function (r) {
      show(box, r.ok ? "ok" : "fail", r.ok
        ? "Your browser verified this " + what + ": the signature is valid and the digests are as shown."
        : "Your browser could NOT verify this " + what + ".", r.lines);
    }, function (e) {
      var unsupported = e && e.name === "NotSupportedError";
      show(box, unsupported ? "unsupported" : "fail", unsupported
        ? "Your browser does not offer Ed25519 in WebCrypto; download the " + what + " and use lensgate receipt verify."
        : "Your browser could NOT verify this " + what + ": " + (e && e.message ? e.message : String(e)), []);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".browser-verify").forEach(function (box) {
      if (box.dataset.receipt) start(box);
    });
  });
})();

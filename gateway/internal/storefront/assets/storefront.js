// The shop's mini app: reads the messenger's signed launch data from the
// URL fragment (Telegram: tgWebAppData, MAX: WebAppData), shows the
// catalog and places an order with it (Authorization: tma <initData>).
(function () {
  "use strict";

  var fragment = new URLSearchParams(location.hash.slice(1));
  var messenger = fragment.has("WebAppData") && !fragment.has("tgWebAppData") ? "max" : "telegram";
  var initData = fragment.get("tgWebAppData") || fragment.get("WebAppData") || "";
  var base = location.pathname.replace(/\/+$/, "");
  var $ = function (id) { return document.getElementById(id); };
  var cart = {}; // product id -> quantity
  var view = null;
  var money = null;

  // The messenger's bridge, when it loads (it does only inside the app).
  function bridge() {
    if (messenger === "telegram") return window.Telegram && window.Telegram.WebApp;
    return window.WebApp;
  }
  var script = document.createElement("script");
  script.src = messenger === "telegram" ? "https://telegram.org/js/telegram-web-app.js" : "https://st.max.ru/js/max-web-app.js";
  script.async = true;
  script.onload = function () {
    var app = bridge();
    if (!app) return;
    if (!initData && app.initData) {
      initData = app.initData;
      if (!view) load();
    }
    if (app.ready) app.ready();
    if (app.expand) app.expand();
    if (view) theme();
  };
  document.head.appendChild(script);

  function status(text, error) {
    var s = $("status");
    s.textContent = text;
    s.hidden = !text;
    s.className = error ? "error" : "";
  }

  // The messenger's colours, when the shop takes them: its theme
  // parameters (the bridge's, else the fragment's tgWebAppThemeParams),
  // else the device's light or dark scheme.
  function theme() {
    if (!view || !view.shop.use_device_color_scheme) return;
    var app = bridge();
    var params = (app && app.themeParams) || null;
    if (!params && fragment.get("tgWebAppThemeParams")) {
      try { params = JSON.parse(fragment.get("tgWebAppThemeParams")); } catch (e) { params = null; }
    }
    var root = document.documentElement;
    var scheme = (app && app.colorScheme) ||
      (window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
    root.classList.toggle("dark", scheme === "dark");
    if (!params) return;
    var map = { bg_color: "--bg", text_color: "--text", hint_color: "--hint", secondary_bg_color: "--card",
      button_color: "--button", button_text_color: "--button-text" };
    Object.keys(map).forEach(function (k) {
      if (typeof params[k] === "string" && /^#[0-9a-fA-F]{3,8}$/.test(params[k])) root.style.setProperty(map[k], params[k]);
    });
  }

  function request(method, path, body) {
    return fetch(base + path, {
      method: method,
      headers: body ? { "Authorization": "tma " + initData, "Content-Type": "application/json" } : { "Authorization": "tma " + initData },
      body: body ? JSON.stringify(body) : undefined
    }).then(function (res) {
      return res.json().then(function (data) {
        if (!res.ok) throw new Error(data.message || ("HTTP " + res.status));
        return data;
      });
    });
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function total() {
    var sum = 0;
    view.products.forEach(function (p) { sum += (cart[p.id] || 0) * Math.round(p.price * 100); });
    return sum / 100;
  }

  function renderCart() {
    var n = Object.keys(cart).length;
    $("cart").hidden = n === 0;
    $("order").textContent = "Place order · " + money.format(total());
  }

  function renderQty(box, p) {
    box.textContent = "";
    var q = cart[p.id] || 0;
    if (!q) {
      var add = el("button", "add", "Add to cart");
      add.type = "button";
      add.setAttribute("data-product", p.id);
      add.onclick = function () { cart[p.id] = 1; renderQty(box, p); renderCart(); };
      box.appendChild(add);
      return;
    }
    var minus = el("button", "minus", "−"), plus = el("button", "plus", "+");
    minus.type = plus.type = "button";
    minus.setAttribute("aria-label", "One less");
    plus.setAttribute("aria-label", "One more");
    minus.onclick = function () { if (--cart[p.id] <= 0) delete cart[p.id]; renderQty(box, p); renderCart(); };
    plus.onclick = function () { if (cart[p.id] < 1000) cart[p.id]++; renderQty(box, p); renderCart(); };
    box.appendChild(minus);
    box.appendChild(el("span", "count", String(q)));
    box.appendChild(plus);
  }

  function render() {
    document.title = view.shop.name;
    $("shop-name").textContent = view.shop.name;
    $("catalog-name").textContent = view.catalog.name;
    money = new Intl.NumberFormat(navigator.language || "en", { style: "currency", currency: view.catalog.currency });
    var list = $("products");
    list.textContent = "";
    view.products.forEach(function (p) {
      var li = el("li", "product");
      li.setAttribute("data-id", p.id);
      var img = el("div", "image", p.name.trim().charAt(0).toUpperCase());
      if (p.images.length) {
        var i = document.createElement("img");
        i.alt = p.name;
        i.loading = "lazy";
        i.onerror = function () { i.remove(); };
        i.src = p.images[0];
        img.textContent = "";
        img.appendChild(i);
      }
      li.appendChild(img);
      var body = el("div", "body");
      if (p.category) body.appendChild(el("span", "category", p.category));
      body.appendChild(el("span", "name", p.name));
      if (p.description) body.appendChild(el("span", "description", p.description));
      body.appendChild(el("span", "price", money.format(p.price)));
      var qty = el("div", "qty");
      renderQty(qty, p);
      body.appendChild(qty);
      li.appendChild(body);
      list.appendChild(li);
    });
    status(view.products.length ? "" : "No products yet.");
    theme();
    renderCart();
  }

  function load() {
    if (!initData) {
      status("Open this shop from the messenger.", true);
      return;
    }
    request("GET", "/catalog").then(function (data) {
      view = data;
      render();
    }).catch(function (e) { status(e.message, true); });
  }

  $("order").onclick = function () {
    var items = view.products.filter(function (p) { return cart[p.id]; })
      .map(function (p) { return { product_id: p.id, quantity: cart[p.id] }; });
    if (!items.length) return;
    var button = $("order");
    button.disabled = true;
    request("POST", "/orders", { items: items, comment: $("comment").value }).then(function (order) {
      $("products").hidden = true;
      $("cart").hidden = true;
      $("done").hidden = false;
      $("done-text").textContent = "Order " + order.order_id + " for " +
        new Intl.NumberFormat(navigator.language || "en", { style: "currency", currency: order.currency }).format(order.amount) +
        " is placed. The shop will reply in the chat.";
      document.body.setAttribute("data-order-id", order.order_id);
    }).catch(function (e) {
      button.disabled = false;
      status(e.message, true);
    });
  };

  load();
})();

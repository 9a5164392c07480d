/**
 * The ControlZ page: one HTML document with its style and script inline (nothing is loaded from
 * anywhere else). It reads the JSON API of controlz.ts every two seconds and redraws: process and
 * build, log scopes (each level a menu that applies at once), memory and event-loop figures with
 * a two-minute trend, environment, arguments, metrics (filterable) and signals.
 */
export const CONTROLZ_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ControlZ · meshd</title>
<style>
:root{--bg:#f5f7fa;--card:#fff;--ink:#1d2330;--muted:#5f6b7d;--line:#e1e6ee;--accent:#2f6fde;--ok:#1f8a4c;--warn:#b7791f;--bad:#c53030}
@media (prefers-color-scheme:dark){:root{--bg:#12161d;--card:#1b212b;--ink:#e6ebf2;--muted:#98a3b3;--line:#2b3340;--accent:#6ea0ff}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink)}
header{display:flex;align-items:center;gap:1rem;padding:.8rem 1.5rem;background:var(--card);border-bottom:1px solid var(--line);position:sticky;top:0;z-index:1}
header h1{font-size:1.15rem;margin:0}
header .sub{color:var(--muted);font-size:.9rem}
#status{margin-left:auto;font-size:.85rem;color:var(--muted)}
#status.err{color:var(--bad)}
nav{display:flex;flex-wrap:wrap;gap:.25rem;padding:.6rem 1.5rem 0}
nav button{border:1px solid transparent;background:none;color:var(--muted);padding:.4rem .8rem;border-radius:6px 6px 0 0;cursor:pointer;font:inherit}
nav button[aria-selected=true]{background:var(--card);color:var(--ink);border-color:var(--line);border-bottom-color:var(--card)}
main{padding:0 1.5rem 2rem}
section{display:none;background:var(--card);border:1px solid var(--line);border-radius:0 8px 8px 8px;padding:1.2rem 1.4rem}
section.on{display:block}
h2{font-size:1.05rem;margin:0 0 .8rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(12rem,1fr));gap:.8rem}
.fig{border:1px solid var(--line);border-radius:8px;padding:.6rem .8rem}
.fig .k{color:var(--muted);font-size:.8rem;text-transform:uppercase;letter-spacing:.03em}
.fig .v{font-size:1.35rem;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.8rem;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
td.mono,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
td.mono{word-break:break-all}
select,input,button.act{font:inherit;padding:.25rem .4rem;border:1px solid var(--line);border-radius:5px;background:var(--card);color:var(--ink)}
button.act{cursor:pointer;background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{background:var(--bad);border-color:var(--bad)}
.lv-debug{color:var(--accent)}.lv-warn{color:var(--warn)}.lv-error,.lv-fatal{color:var(--bad)}.lv-none{color:var(--muted)}
svg.trend{width:100%;height:70px;border:1px solid var(--line);border-radius:6px;margin-top:.4rem}
svg.trend polyline{fill:none;stroke:var(--accent);stroke-width:1.5}
pre{white-space:pre-wrap;max-height:36rem;overflow:auto;margin:0}
.row{display:flex;gap:.6rem;align-items:center;margin-bottom:.8rem;flex-wrap:wrap}
.note{color:var(--muted);font-size:.85rem}
</style>
</head>
<body>
<header><h1>ControlZ</h1><span class="sub" id="ident">meshd</span><span id="status">connecting…</span></header>
<nav role="tablist">
<button role="tab" data-tab="overview" aria-selected="true">Overview</button>
<button role="tab" data-tab="logging">Logging scopes</button>
<button role="tab" data-tab="memory">Memory &amp; event loop</button>
<button role="tab" data-tab="env">Environment</button>
<button role="tab" data-tab="args">Arguments</button>
<button role="tab" data-tab="metrics">Metrics</button>
<button role="tab" data-tab="signals">Signals</button>
</nav>
<main>
<section id="overview" class="on"><h2>Process</h2><div class="grid" id="proc"></div><h2 style="margin-top:1.2rem">Build</h2><table><tbody id="version"></tbody></table></section>
<section id="logging"><h2>Logging scopes</h2>
<div class="row"><label>Filter <input id="scopeFilter" placeholder="scope name"></label><button class="act" id="reset">Reset all to info</button><span class="note">A change applies at once, to this daemon only.</span></div>
<table><thead><tr><th>Scope</th><th>Output level</th><th>Stack-trace level</th></tr></thead><tbody id="scopes"></tbody></table></section>
<section id="memory"><h2>Memory</h2><div class="grid" id="mem"></div><svg class="trend" id="heapTrend" viewBox="0 0 120 70" preserveAspectRatio="none"><polyline points=""/></svg><p class="note">Heap used over the last two minutes; <span id="heapTrendRange"></span></p>
<h2 style="margin-top:1.2rem">Event loop</h2><div class="grid" id="loop"></div><svg class="trend" id="loopTrend" viewBox="0 0 120 70" preserveAspectRatio="none"><polyline points=""/></svg><p class="note">Event-loop delay p99 over the last two minutes; <span id="loopTrendRange"></span></p></section>
<section id="env"><h2>Environment</h2><p class="note">Values of names that look secret are not shown.</p><table><tbody id="envs"></tbody></table></section>
<section id="args"><h2>Command-line arguments</h2><table><tbody id="argv"></tbody></table></section>
<section id="metrics"><h2>Metrics</h2><div class="row"><label>Filter <input id="metricFilter" placeholder="metric name"></label></div><pre id="metricText"></pre></section>
<section id="signals"><h2>Signals</h2><p>Send a signal to this daemon. Both stop it gracefully (within <code>--shutdownDuration</code>).</p><div class="row" id="sigs"></div><p class="note" id="sigNote"></p></section>
</main>
<script>
(function(){
"use strict";
var $=function(id){return document.getElementById(id)};
var esc=function(s){return String(s).replace(/[&<>"']/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;","\\"":"&quot;","'":"&#39;"}[c]})};
var bytes=function(n){var u=["B","KiB","MiB","GiB"],i=0;while(n>=1024&&i<u.length-1){n/=1024;i++}return n.toFixed(i?1:0)+" "+u[i]};
var dur=function(s){s=Math.floor(s);var d=Math.floor(s/86400),h=Math.floor(s%86400/3600),m=Math.floor(s%3600/60);return (d?d+"d ":"")+(d||h?h+"h ":"")+m+"m "+(s%60)+"s"};
var fig=function(k,v){return '<div class="fig"><div class="k">'+esc(k)+'</div><div class="v">'+esc(v)+'</div></div>'};
var tab="overview",levels=[],heap=[],lag=[];
function status(text,err){var s=$("status");s.textContent=text;s.className=err?"err":""}
function get(path){return fetch(path,{cache:"no-store"}).then(function(r){if(!r.ok)return r.json().then(function(b){throw new Error(b.error||r.statusText)});return (r.headers.get("content-type")||"").indexOf("json")>=0?r.json():r.text()})}
function post(path,body){return fetch(path,{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify(body)}).then(function(r){return r.json().then(function(b){if(!r.ok)throw new Error(b.error||r.statusText);return b})})}
function trend(id,values,fmt){var max=Math.max.apply(null,values),min=Math.min.apply(null,values),span=max-min||Math.max(Math.abs(max),1e-9),n=values.length;
 $(id).firstElementChild.setAttribute("points",values.map(function(v,i){return (n<2?0:i*120/(n-1)).toFixed(1)+","+(64-(v-min)/span*58).toFixed(1)}).join(" "));
 $(id+"Range").textContent=n?"range "+fmt(min)+" – "+fmt(max)+" over "+n+" samples":""}
function show(name){tab=name;document.querySelectorAll("nav button").forEach(function(b){b.setAttribute("aria-selected",String(b.dataset.tab===name))});document.querySelectorAll("section").forEach(function(s){s.classList.toggle("on",s.id===name)});refresh()}
document.querySelectorAll("nav button").forEach(function(b){b.addEventListener("click",function(){show(b.dataset.tab)})});
function menu(scope,kind,value){return '<select data-scope="'+esc(scope)+'" data-kind="'+kind+'" class="lv-'+esc(value)+'" aria-label="'+esc(scope)+' '+kind+' level">'+levels.map(function(l){return '<option'+(l===value?" selected":"")+'>'+esc(l)+'</option>'}).join("")+'</select>'}
function drawScopes(data){levels=data.levels;var f=$("scopeFilter").value.trim().toLowerCase(),body=$("scopes");
 if(document.activeElement&&document.activeElement.tagName==="SELECT"&&body.contains(document.activeElement))return;
 body.innerHTML=data.scopes.filter(function(s){return !f||s.name.toLowerCase().indexOf(f)>=0}).map(function(s){return '<tr data-row="'+esc(s.name)+'"><td class="mono">'+esc(s.name)+'</td><td>'+menu(s.name,"output",s.outputLevel)+'</td><td>'+menu(s.name,"stack",s.stackTraceLevel)+'</td></tr>'}).join("")}
$("scopes").addEventListener("change",function(e){var t=e.target;if(t.tagName!=="SELECT")return;var body={scope:t.dataset.scope};body[t.dataset.kind==="output"?"outputLevel":"stackTraceLevel"]=t.value;
 post("/scopej",body).then(function(d){t.blur();drawScopes(d);status("scope "+body.scope+" set to "+t.value)}).catch(function(err){status(err.message,true)})});
$("scopeFilter").addEventListener("input",function(){get("/scopej").then(drawScopes)});
$("reset").addEventListener("click",function(){post("/scopej/reset",{}).then(function(d){drawScopes(d);status("every scope reset to info")}).catch(function(err){status(err.message,true)})});
$("metricFilter").addEventListener("input",function(){refresh()});
["SIGTERM","SIGINT"].forEach(function(sig){var b=document.createElement("button");b.className="act danger";b.textContent="Send "+sig;b.addEventListener("click",function(){if(!confirm("Send "+sig+" to meshd? It will stop."))return;post("/signalj",{signal:sig}).then(function(){$("sigNote").textContent=sig+" sent; the daemon is stopping."}).catch(function(err){status(err.message,true)})});$("sigs").appendChild(b)});
function sample(){return Promise.all([get("/memj"),get("/loopj")]).then(function(r){heap.push(r[0].heapUsed);lag.push(r[1].delayMs.p99);if(heap.length>60){heap.shift();lag.shift()}return r})}
function refresh(){
 var work;
 if(tab==="overview")work=Promise.all([get("/procj"),get("/versionj")]).then(function(r){var p=r[0],v=r[1];$("ident").textContent="meshd "+v.version+" · pid "+p.pid+" · "+p.hostname;
  $("proc").innerHTML=fig("Uptime",dur(p.uptimeSeconds))+fig("CPU user",p.cpuUserSeconds.toFixed(1)+" s")+fig("CPU system",p.cpuSystemSeconds.toFixed(1)+" s")+fig("Node",p.node)+fig("Platform",p.platform)+fig("CPUs / load",p.cpus+" / "+p.loadAverage[0].toFixed(2))+fig("Profiling",p.profiling?"on":"off");
  $("version").innerHTML=Object.keys(v).map(function(k){return '<tr><th>'+esc(k)+'</th><td class="mono">'+esc(v[k])+'</td></tr>'}).join("")});
 else if(tab==="logging")work=get("/scopej").then(drawScopes);
 else if(tab==="memory")work=sample().then(function(r){var m=r[0],l=r[1];
  $("mem").innerHTML=fig("Resident set",bytes(m.rss))+fig("Heap used",bytes(m.heapUsed))+fig("Heap total",bytes(m.heapTotal))+fig("Heap limit",bytes(m.heapSizeLimit))+fig("External",bytes(m.external))+fig("Array buffers",bytes(m.arrayBuffers));
  $("loop").innerHTML=fig("Utilization",(l.utilization*100).toFixed(1)+" %")+fig("Delay p50",l.delayMs.p50.toFixed(1)+" ms")+fig("Delay p99",l.delayMs.p99.toFixed(1)+" ms")+fig("Delay max",l.delayMs.max.toFixed(1)+" ms");
  trend("heapTrend",heap,bytes);trend("loopTrend",lag,function(v){return v.toFixed(1)+" ms"})});
 else if(tab==="env")work=get("/envj").then(function(e){$("envs").innerHTML=e.map(function(x){return '<tr><th class="mono">'+esc(x.name)+'</th><td class="mono">'+esc(x.value)+'</td></tr>'}).join("")});
 else if(tab==="args")work=get("/argj").then(function(a){$("argv").innerHTML=a.map(function(x,i){return '<tr><th>'+i+'</th><td class="mono">'+esc(x)+'</td></tr>'}).join("")});
 else if(tab==="metrics")work=get("/metricj").then(function(t){var f=$("metricFilter").value.trim();$("metricText").textContent=f?t.split("\\n").filter(function(l){return l.indexOf(f)>=0}).join("\\n"):t});
 else work=Promise.resolve();
 return work.then(function(){if($("status").className!=="err"||true)status("live · updated "+new Date().toLocaleTimeString())}).catch(function(err){status("cannot reach meshd: "+err.message,true)});
}
refresh();
setInterval(function(){if(tab!=="memory")sample().catch(function(){});refresh()},2000);
})();
</script>
</body>
</html>
`;

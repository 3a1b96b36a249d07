// The self-contained HTML page of `gpumemrec html`: inline CSS and JS, no
// network, no third-party code. The flame graph is a small hand-written
// icicle (absolutely positioned <div>s, one per visible node) rather than a
// vendored library (d3-flame-graph needs d3: ~300 KB in every report and a
// build-time download); what it shows follows memray's flame graph reporter
// (bloomberg/memray docs/flamegraph.rst: width = bytes held by a function and
// its callees, click to zoom, search) and PyTorch's memory_viz
// (pytorch/pytorch torch/utils/viz/MemoryViz.js: the stack of the selected
// allocation beside the chart, small entries folded into a summary) without
// their code.
//
// The data (tools/html_data.cpp) is written between kHtmlHead and
// kHtmlTail, inside a <script type="application/json">. The
// page writes "gmr-render-ok" (or "gmr-render-error: ...") into #gmr-status
// when it has rendered. Opened as report.html#gmr-selftest=TERM it also
// clicks the largest child of the root, searches for TERM and writes what
// it saw as JSON into #gmr-test (tests/tools/check_html.py reads it back).
#pragma once

namespace gpumemrec::cli {

inline constexpr const char* kHtmlHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>
body{font:13px/1.4 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1f2933;color:#fff;padding:12px 20px}
header h1{font-size:18px;margin:0 0 4px}
header .sub{color:#cbd2d9;font-size:12px}
main{padding:12px 20px;display:grid;grid-template-columns:minmax(0,1fr) 380px;gap:16px}
section{background:#fff;border:1px solid #e1e4e8;border-radius:6px;padding:10px 14px;margin-bottom:14px}
h2{font-size:14px;margin:0 0 8px}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}
.kv b{font-weight:600;color:#52606d}
.fail{color:#b42318;font-weight:600;font-size:15px}
svg text{font-size:11px;fill:#52606d}
.chart{width:100%;height:auto;display:block}
.bar{display:flex;gap:8px;align-items:center;margin-bottom:6px;flex-wrap:wrap}
.bar input{font:inherit;padding:2px 6px;width:220px}
.bar button{font:inherit;padding:1px 8px;cursor:pointer}
#crumbs{font-size:12px;color:#52606d}
#crumbs a{color:#1d4ed8;cursor:pointer;text-decoration:none}
#flamebox{max-height:540px;overflow:auto;border:1px solid #eef0f3}
#flame{position:relative;width:100%;background:#fff}
#flame div{position:absolute;box-sizing:border-box;height:17px;border-right:1px solid #fff;border-bottom:1px solid #fff;
  overflow:hidden;white-space:nowrap;text-overflow:ellipsis;font-size:11px;line-height:16px;padding:0 3px;cursor:pointer;color:#10161c}
#flame div:hover{outline:1px solid #1f2933;z-index:2}
#flame div.n1{background:hsl(28,85%,78%)} #flame div.n2{background:hsl(210,75%,80%)} #flame div.n0{background:#d5d9de}
#flame div.anc{opacity:.7}
#flame.searching div{opacity:.35} #flame.searching div.hit{opacity:1;background:#f5c542;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:12px}
th,td{padding:3px 6px;border-bottom:1px solid #eef0f3;text-align:left;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th{cursor:pointer;background:#f3f4f6;position:sticky;top:0;user-select:none}
th.asc::after{content:" \25B2"} th.desc::after{content:" \25BC"}
tbody tr{cursor:pointer} tbody tr:hover{background:#f0f6ff} tr.sel{background:#dbeafe}
td.grew,td.new{color:#b42318} td.shrank,td.gone{color:#067647}
.scroll{max-height:420px;overflow:auto}
#stack{font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;word-break:break-all}
#stack .py{color:#1d4ed8} #stack .nat{color:#374151}
aside{position:sticky;top:8px;align-self:start}
.note{color:#6b7280;font-size:12px}
.narrow{background:#fff7e6;border:1px solid #f5c542;border-radius:4px;padding:2px 8px;font-size:12px;display:none}
#tip{position:fixed;pointer-events:none;background:#1f2933;color:#fff;padding:3px 6px;border-radius:3px;font-size:11px;display:none;z-index:9;max-width:640px;word-break:break-all}
</style></head><body>
<header><h1 id="title">gpumemrec report</h1><div class="sub" id="subtitle"></div></header>
<main><div>
<section><h2>What failed</h2><div id="failure"></div></section>
<section><h2>Memory over time</h2><div id="charts"></div>
<div class="note" id="curvenote"></div></section>
<section><h2>Live bytes by call path (flame graph)</h2>
<div class="bar"><input id="search" type="search" placeholder="search a function or file" aria-label="search">
<span class="note" id="searchnote"></span><button id="reset" type="button">reset zoom</button></div>
<div id="crumbs"></div>
<div id="flamebox"><div id="flame"></div></div>
<div class="note" id="flamenote">Width = live bytes held by a frame and everything it called; callers on top, the frame that
allocated at the bottom of each column. Orange: native frames, blue: Python frames. Click a frame to zoom into it and narrow the
tables below to the allocations under it; click a frame above it (or "reset zoom") to go back.</div></section>
<section id="basesec" style="display:none"><h2>Compared with the baseline</h2><div class="note" id="basenote"></div>
<div class="scroll"><table id="base"></table></div></section>
<section><h2>Call sites</h2><div class="narrow" id="narrow1"></div><div class="scroll"><table id="sites"></table></div></section>
<section><h2>Live allocations</h2><div class="narrow" id="narrow2"></div><div class="note" id="allocnote"></div>
<div class="scroll"><table id="allocs"></table></div></section>
<section><h2>Events by API</h2><table id="apis"></table></section>
</div>
<aside><section><h2>Stack</h2><div id="stack" class="note">Click a call site, a frame or an allocation.</div></section></aside>
</main>
<div id="tip"></div>
<div id="gmr-status" style="display:none">gmr-render-pending</div>
<div id="gmr-test" style="display:none"></div>
<script type="application/json" id="gmr-data">)HTML";

inline constexpr const char* kHtmlTail = R"HTML(</script>
<script>
(function(){
"use strict";
var T0=(window.performance&&performance.now)?performance.now():0;
var status=document.getElementById("gmr-status");
window.addEventListener("error",function(e){status.textContent="gmr-render-error: "+(e.message||"error");});
function $(id){return document.getElementById(id);}
function esc(s){return String(s).replace(/[&<>"']/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;","'":"&#39;"}[c];});}
function hb(n){if(n===null||n===undefined)return "?";var neg=n<0;if(neg)n=-n;var u=["B","KiB","MiB","GiB","TiB","PiB"],i=0;
  while(n>=1024&&i<u.length-1){n/=1024;i++;}return (neg?"-":"")+(i===0?n+" B":(n>=100?n.toFixed(0):n>=10?n.toFixed(1):n.toFixed(2))+" "+u[i]);}
function hbs(n){return (n>0?"+":"")+hb(n);}
function pad(n,w){n=String(n);while(n.length<w)n="0"+n;return n;}
function utc(t){return t?new Date(t*1000).toISOString().replace("T"," ").replace(/\.\d+Z$/,"Z"):"-";}
// Wall clock with microseconds (the bundle's timestamps are seconds with 6 decimals).
function wall(t){if(!t)return "-";var s=Math.floor(t),us=Math.round((t-s)*1e6);if(us>=1e6){s++;us-=1e6;}
  return new Date(s*1000).toISOString().replace("T"," ").replace(/\.\d+Z$/,"")+"."+pad(us,6)+"Z";}
// Time axis unit for a span in seconds: the largest of µs, ms, s, min that keeps the ticks readable.
function timeUnit(span){if(span<2e-3)return {f:1e6,u:"\u00b5s"};if(span<2)return {f:1e3,u:"ms"};if(span<180)return {f:1,u:"s"};return {f:1/60,u:"min"};}
function niceStep(raw){var p=Math.pow(10,Math.floor(Math.log10(raw))),m=raw/p;return (m<=1?1:m<=2?2:m<=5?5:10)*p;}
function fmtT(v,step){var d=step>=1?0:Math.min(6,Math.ceil(-Math.log10(step)));return v.toFixed(d);}
var D,tip,F=null,focus=0,tables={};
function showTip(e,html){tip.innerHTML=html;tip.style.display="block";
  var x=e.clientX+12,y=e.clientY+12;if(x+tip.offsetWidth>innerWidth)x=Math.max(0,e.clientX-12-tip.offsetWidth);
  tip.style.left=x+"px";tip.style.top=y+"px";}
function hideTip(){tip.style.display="none";}
function showStack(id,label){
  var el=$("stack"),lines=D.stacks[String(id)];
  var h="<div><b>"+esc(label||("stack "+id))+"</b></div>";
  if(!lines){h+="<div class='note'>"+(id?"stack "+id+" not recorded":"no stack recorded")+"</div>";}
  else if(!lines.length){h+="<div class='note'>empty stack</div>";}
  else{for(var i=0;i<lines.length;i++){var l=lines[i],py=l[0].lastIndexOf("py ",0)===0;
    h+="<div class='"+(py?"py":"nat")+"' title='"+esc(l[1]||l[0])+"'>"+esc(l[0])+"</div>";}}
  el.className="";el.innerHTML=h;
}
function failure(){
  var m=D.meta,h="";
  if(m.api){h+="<div class='fail'>"+esc(m.api)+"("+hb(m.requested)+") on device "+m.device+" &rarr; "+esc(m.error_name||"error")+"</div>";}
  else{h+="<div class='fail'>"+esc(m.reason)+" dump (no failed call)</div>";}
  h+="<div class='kv' style='margin-top:6px'>";
  function kv(k,v){h+="<b>"+k+"</b><span>"+v+"</span>";}
  kv("device free / total",hb(m.free)+" / "+hb(m.total));
  kv("live",hb(m.live_bytes)+" in "+m.live_allocations+" allocations");
  kv("reason",esc(m.reason));
  if(m.outcome)kv("outcome","<span id='outcome'>"+esc(m.outcome)+"</span>"+(m.outcome_detail?" &mdash; "+esc(m.outcome_detail):""));
  if(m.recovery)kv("recovery",m.recovery.handler?esc(m.recovery.handler)+" caught the error on thread "+m.recovery.thread+" "+
    m.recovery.after_ms.toFixed(1)+" ms after the failure and retries with less":
    esc(m.recovery.retry_api||"retry")+"("+hb(m.recovery.retry_size)+") on thread "+m.recovery.thread+
    " succeeded "+m.recovery.after_ms.toFixed(1)+" ms after the failure; "+hb(m.recovery.freed)+" freed before it");
  if(m.recovered_failures)kv("recovered OOMs since the previous bundle",""+m.recovered_failures);
  m.context_destructions.forEach(function(c,i){kv("context destroyed",(c.created?"a context of device "+c.device+" (cuCtxCreate)":"device "+c.device+"'s primary context")+" was destroyed by "+esc(c.api)+
    (c.stack_id?" (<a href='#' class='ctxstack' data-i='"+i+"'>stack</a>)":"")+": "+c.allocations+" allocations, "+hb(c.bytes)+" freed with it, at "+utc(c.t));});
  kv("time",utc(m.timestamp));
  kv("process","pid "+m.pid+(m.host?" on "+esc(m.host):"")+(m.rank!==null?" (rank "+m.rank+")":""));
  if(m.cmdline)kv("command",esc(m.cmdline));
  kv("events in the ring",D.event_count.toLocaleString());
  var rec=0,own="";D.ooms.forEach(function(o){if(o.recovered)rec++;if(o.verdict)own=o.verdict;});
  if(D.ooms.length)kv("OOMs in the ring",D.ooms.length+(rec?" ("+rec+" recovered: "+(own?"the bundle's own failure by its verdict ("+esc(own)+"), the others when ":"")+
    "the same thread later allocated as much)":""));
  h+="</div>";
  if(m.framework)h+="<pre id='framework' style='margin-top:6px'>"+esc(m.framework)+"</pre>";
  if(m.stack_id){h+="<div style='margin-top:6px'><b>site</b> "+esc(m.fail_site)+(m.fail_lib?" <span class='note'>(library "+esc(m.fail_lib)+")</span>":"")+
    " &mdash; <a href='#' id='failstack'>stack of the failing call</a></div>";}
  h+=accountingBars();
  h+=roleBars();
  $("failure").innerHTML=h;
  var fs=$("failstack");if(fs)fs.onclick=function(e){e.preventDefault();showStack(m.stack_id,"failing call");};
  document.querySelectorAll("#failure a.ctxstack").forEach(function(a){a.onclick=function(e){e.preventDefault();
    var c=m.context_destructions[+a.getAttribute("data-i")];showStack(c.stack_id,c.api);};});
}
// One stacked bar per device: where its memory went (metadata.json device_accounting).
function accountingBars(){
  var h="",cols=["#4c78a8","#72b7b2","#54a24b","#eeca3b","#b279a2","#9d755d"];
  (D.accounting||[]).forEach(function(a){
    var total=a.total||0,parts=[];
    a.libs.forEach(function(l,i){parts.push([l[0]+" (recorded)",l[1],cols[i%cols.length]]);});
    parts.push(["this process, not recorded (context, modules, graph pools)",a.unrecorded,"#f58518"]);
    parts.push(["other processes",a.others,"#e45756"]);
    parts.push(["unaccounted",a.unaccounted,"#bab0ac"]);
    parts.push(["free",a.free,"#eef0f2"]);
    h+="<div style='margin-top:8px'><b>Where device "+a.device+"'s "+(total?hb(total):"memory")+" went</b>";
    if(total){h+="<div class='acct' style='display:flex;height:18px;border:1px solid #ccc;margin-top:3px'>";
      parts.forEach(function(p){if(p[1]===null||!p[1])return;var w=100*p[1]/total;
        h+="<div title='"+esc(p[0]+": "+hb(p[1]))+"' style='width:"+w.toFixed(2)+"%;background:"+p[2]+"'></div>";});
      h+="</div>";}
    h+="<div class='note'>"+parts.map(function(p){return esc(p[0])+": "+(p[1]===null?"unknown":hb(p[1]));}).join("; ")+"</div>";
    if(a.note)h+="<div class='note'>("+esc(a.note)+")</div>";
    h+="</div>";});
  return h;
}
// Memory by role (common/roles.h): one stacked bar per device, framework
// roles first, then the driver level (context, other processes, unaccounted
// and free in the accounting bar's colours); "What to try" under them.
function roleBars(){
  var h="",cols={framework:["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#7f7f7f"],
    driver:["#17becf","#bcbd22","#e377c2","#aec7e8","#ffbb78","#98df8a","#c5b0d5"]},
    fixed={context:"#f58518",other_process:"#e45756",unaccounted:"#bab0ac",free:"#eef0f2"};
  (D.roles||[]).forEach(function(r){
    var total=r.total||0,n={framework:0,driver:0};
    h+="<div class='roles' data-dev='"+r.device+"' style='margin-top:8px'><b>Memory by role on device "+r.device+"</b> <span class='note'>("+esc(r.from)+")</span>";
    if(total){h+="<div class='rolebar' style='display:flex;height:18px;border:1px solid #ccc;margin-top:3px'>";
      r.rows.forEach(function(x){if(x[1]===null||x[1]<=0)return;var c=cols[x[2]]||cols.driver,col=fixed[x[3]]||c[n[x[2]]++%c.length];
        h+="<div class='role' title='"+esc(x[0]+": "+hb(x[1]))+"' style='width:"+(100*x[1]/total).toFixed(2)+"%;background:"+col+"'></div>";});
      h+="</div>";}
    h+="<div class='note'>"+r.rows.map(function(x){return esc(x[0])+": "+(x[1]===null?"unknown":hb(Math.max(0,x[1])));}).join("; ")+"</div>";
    r.notes.forEach(function(t){h+="<div class='note'>("+esc(t)+")</div>";});
    h+="</div>";});
  if((D.advice||[]).length){h+="<div id='advice' style='margin-top:8px'><b>What to try</b><ul style='margin:2px 0'>";
    D.advice.forEach(function(a){h+="<li>"+esc(a[0])+" <span class='note'>because "+esc(a[1])+"</span></li>";});
    h+="</ul></div>";}
  return h;
}
function chart(c,W,H,L,R,T,B){
  var pk=null;(D.peak||[]).forEach(function(p){if(p.device===c.device)pk=p;});
  var pts=c.points,t0=D.t_min,t1=D.t_max;if(t1<=t0)t1=t0+1e-6;
  var ymax=c.peak;if(c.total&&c.total>ymax)ymax=c.total;if(pk&&pk.bytes>ymax)ymax=pk.bytes;if(!ymax)ymax=1;ymax*=1.05;
  function X(t){return L+(t-t0)/(t1-t0)*(W-L-R);} function Y(v){return T+(1-v/ymax)*(H-T-B);}
  var d="";for(var i=0;i<pts.length;i++){d+=(i?"L":"M")+X(pts[i][0]).toFixed(1)+" "+Y(pts[i][1]).toFixed(1);}
  var s="<svg class='chart' data-dev='"+c.device+"' viewBox='0 0 "+W+" "+H+"' xmlns='http://www.w3.org/2000/svg'>";
  s+="<rect x='"+L+"' y='"+T+"' width='"+(W-L-R)+"' height='"+(H-T-B)+"' fill='#fbfcfd' stroke='#e1e4e8'/>";
  for(var g=0;g<=4;g++){var v=ymax*g/4,y=Y(v);s+="<line x1='"+L+"' x2='"+(W-R)+"' y1='"+y+"' y2='"+y+"' stroke='#eef0f3'/>"+
    "<text x='"+(L-6)+"' y='"+(y+4)+"' text-anchor='end'>"+hb(Math.round(v))+"</text>";}
  var tu=timeUnit(t1-t0),span=(t1-t0)*tu.f,step=niceStep(span/6);
  for(var k=0;k*step<=span*1.0001;k++){var tv=k*step,x=X(t0+tv/tu.f);
    s+="<line x1='"+x+"' x2='"+x+"' y1='"+(H-B)+"' y2='"+(H-B+4)+"' stroke='#9ca3af'/>"+
      "<text class='tick' x='"+x+"' y='"+(H-10)+"' text-anchor='"+(k===0?"start":"middle")+"'>"+fmtT(tv,step)+" "+tu.u+"</text>";}
  if(c.total){var yt=Y(c.total);s+="<line x1='"+L+"' x2='"+(W-R)+"' y1='"+yt+"' y2='"+yt+"' stroke='#9ca3af' stroke-dasharray='4 3'/>"+
    "<text x='"+(W-R-4)+"' y='"+(yt-4)+"' text-anchor='end'>device total "+hb(c.total)+"</text>";}
  if(d){s+="<path d='"+d+" L"+X(pts[pts.length-1][0]).toFixed(1)+" "+Y(0)+" L"+X(pts[0][0]).toFixed(1)+" "+Y(0)+"Z' fill='hsla(210,80%,55%,0.15)'/>";
    s+="<path d='"+d+"' fill='none' stroke='hsl(210,80%,45%)' stroke-width='1.5'/>";}
  var mine=D.ooms.filter(function(o){return o.device===c.device;});
  mine.forEach(function(o,i){var x=X(o.t),col=o.recovered?"#dc8a00":"#d92d20",
    what=o.recovered?"OOM (recovered)":o.verdict&&o.verdict!=="recovered"?"OOM ("+esc(o.verdict)+")":"OOM";
    s+="<line class='"+(o.recovered?"oom-rec":"oom")+"'"+(o.verdict?" data-verdict='"+esc(o.verdict)+"'":"")+" x1='"+x+"' x2='"+x+"' y1='"+T+"' y2='"+(H-B)+"' stroke='"+col+"' stroke-width='2'"+
      (o.recovered?" stroke-dasharray='5 3'":"")+"><title>"+what+": "+esc(o.api)+"("+hb(o.size)+") thread "+o.thread+" at "+wall(o.t)+"</title></line>";
    if(mine.length<=12)s+="<text x='"+(x-4)+"' y='"+(T+16+14*(i%3))+"' text-anchor='end' style='fill:"+col+";font-weight:600'>"+what+" "+hb(o.size)+"</text>";});
  if(pk&&pk.t>=t0&&pk.t<=t1){var px=X(pk.t),py=Y(pk.bytes);
    s+="<circle class='peak' cx='"+px.toFixed(1)+"' cy='"+py.toFixed(1)+"' r='5' fill='#7c3aed'><title>peak "+hb(pk.bytes)+" at "+wall(pk.t)+
      (pk.exact?"":" (not exact: "+esc(pk.why)+")")+"</title></circle><text x='"+(px+8).toFixed(1)+"' y='"+(py-6).toFixed(1)+"' style='fill:#7c3aed;font-weight:600'>peak "+hb(pk.bytes)+"</text>";}
  s+="<line class='cursor' x1='0' x2='0' y1='"+T+"' y2='"+(H-B)+"' stroke='#111' stroke-width='0.5' visibility='hidden'/>";
  s+="<text x='"+(L+6)+"' y='"+(T+14)+"' style='font-weight:600;fill:#1f2933'>device "+c.device+" &mdash; peak "+hb(c.peak)+"</text></svg>";
  return s;
}
function charts(){
  var box=$("charts"),W=900,H=230,L=70,R=12,T=12,B=28,html="";
  if(!D.curves.length){box.innerHTML="<div class='note'>No events in the ring.</div>";return;}
  D.curves.forEach(function(c){html+=chart(c,W,H,L,R,T,B);});
  box.innerHTML=html;
  var nrec=D.ooms.filter(function(o){return o.recovered;}).length;
  var own=D.ooms.filter(function(o){return o.verdict;}).length;
  $("curvenote").textContent=D.curve_note+(D.ooms.length?" Red lines: OOMs"+(nrec?"; dashed orange: OOMs the program recovered from (the same thread later allocated as much)":"")+
    (own?"; the bundle's own failure is marked with the bundle's verdict ("+D.meta.outcome+")":"")+".":"");
  Array.prototype.forEach.call(box.querySelectorAll("svg"),function(svg){
    var dev=+svg.getAttribute("data-dev"),c=null;D.curves.forEach(function(x){if(x.device===dev)c=x;});
    var cur=svg.querySelector(".cursor"),t0=D.t_min,t1=D.t_max>D.t_min?D.t_max:D.t_min+1e-6,tu=timeUnit(t1-t0);
    svg.addEventListener("mousemove",function(e){
      var r=svg.getBoundingClientRect(),x=(e.clientX-r.left)/r.width*W;
      var t=t0+(x-L)/(W-L-R)*(t1-t0),p=c.points,lo=0,hi=p.length-1;
      if(!p.length)return; while(lo<hi){var mid=(lo+hi+1)>>1;if(p[mid][0]<=t)lo=mid;else hi=mid-1;}
      cur.setAttribute("x1",x);cur.setAttribute("x2",x);cur.setAttribute("visibility","visible");
      showTip(e,"+"+((p[lo][0]-t0)*tu.f).toFixed(3)+" "+tu.u+"<br>"+wall(p[lo][0])+"<br>"+hb(p[lo][1]));});
    svg.addEventListener("mouseleave",function(){cur.setAttribute("visibility","hidden");hideTip();});
  });
}
// ---- flame graph (icicle) ------------------------------------------------
// D.flame.nodes[i] = [parent, label, bytes, count, kind, end], pre-order: the
// subtree of i is [i, end).
function prepFlame(){
  var N=D.flame.nodes,n=N.length;F={n:n,par:new Int32Array(n),lab:new Int32Array(n),bytes:new Float64Array(n),
    count:new Float64Array(n),kind:new Uint8Array(n),end:new Int32Array(n),depth:new Int32Array(n),hit:new Uint8Array(n),maxDepth:0};
  for(var i=0;i<n;i++){var r=N[i];F.par[i]=r[0];F.lab[i]=r[1];F.bytes[i]=r[2];F.count[i]=r[3];F.kind[i]=r[4];F.end[i]=r[5];
    F.depth[i]=i?F.depth[r[0]]+1:0;if(F.depth[i]>F.maxDepth)F.maxDepth=F.depth[i];}
}
function lshort(i){return D.flame.labels[F.lab[i]][0];}
function lfull(i){var l=D.flame.labels[F.lab[i]];return l[1]||l[0];}
function ancestors(i){var a=[];while(i>0){i=F.par[i];a.unshift(i);}return a;}
function renderFlame(){
  var el=$("flame"),W=el.clientWidth||1000,RH=18,h=[],root=focus,anc=ancestors(root),base=anc.length;
  var x=new Float64Array(F.n),next=new Float64Array(F.n),scale=F.bytes[root]>0?W/F.bytes[root]:0,maxd=0;
  function box(i,left,width,depth,cls){
    var label=width>28?esc(lshort(i)):"";
    h.push("<div data-i='"+i+"' data-bytes='"+F.bytes[i]+"' class='n"+F.kind[i]+(F.hit[i]?" hit":"")+cls+"' style='left:"+left.toFixed(1)+
      "px;top:"+(depth*RH)+"px;width:"+Math.max(width,1).toFixed(1)+"px'>"+label+"</div>");
    if(depth>maxd)maxd=depth;}
  anc.forEach(function(a,d){box(a,0,W,d," anc");});
  x[root]=0;next[root]=0;box(root,0,W,base,"");
  for(var i=root+1;i<F.end[root];){
    var p=F.par[i],w=F.bytes[i]*scale;x[i]=x[p]+next[p];next[p]+=w;
    if(w<1){i=F.end[i];continue;}  // too narrow to see: skip the subtree
    next[i]=0;box(i,x[i],w,base+F.depth[i]-F.depth[root],"");i++;}
  el.innerHTML=h.join("");el.style.height=((maxd+1)*RH)+"px";
  var c="",path=anc.concat([root]);
  path.forEach(function(a,k){c+=(k?" &rsaquo; ":"")+(k<path.length-1?"<a data-i='"+a+"'>"+esc(lshort(a))+"</a>":"<b>"+esc(lshort(a))+"</b>");});
  $("crumbs").innerHTML=c+" &mdash; "+hb(F.bytes[root])+" ("+(100*F.bytes[root]/(F.bytes[0]||1)).toFixed(1)+"% of live bytes)";
}
function inFocus(leaf){return leaf>=focus&&leaf<F.end[focus];}
function setFocus(i){
  focus=i;renderFlame();
  var s=D.sites.filter(function(x){return inFocus(x.leaf);}),a=D.allocs.filter(function(x){return inFocus(x.leaf);});
  tables.sites.setRows(s);tables.allocs.setRows(a);
  var msg=i?"Narrowed to "+esc(lshort(i))+": "+s.length+" call sites, "+a.length+" of the listed allocations. <a href='#' class='unz'>show all</a>":"";
  ["narrow1","narrow2"].forEach(function(id){var n=$(id);n.innerHTML=msg;n.style.display=i?"block":"none";
    var u=n.querySelector(".unz");if(u)u.onclick=function(e){e.preventDefault();setFocus(0);};});
}
function search(q){
  q=q.trim().toLowerCase();var el=$("flame"),nm=0,bytes=0;
  for(var i=0;i<F.n;i++)F.hit[i]=0;
  if(q){for(var j=0;j<F.n;j++){var l=D.flame.labels[F.lab[j]];
      if(l[0].toLowerCase().indexOf(q)>=0||(l[1]&&l[1].toLowerCase().indexOf(q)>=0)){F.hit[j]=1;nm++;}}
    for(var k=1;k<F.n;){if(F.hit[k]){bytes+=F.bytes[k];k=F.end[k];}else k++;}}  // outermost matches only
  el.className=q?"searching":"";renderFlame();
  $("searchnote").textContent=q?(nm+" frame"+(nm===1?"":"s")+" match, holding "+hb(bytes)+" ("+(100*bytes/(F.bytes[0]||1)).toFixed(1)+"% of live bytes)"):"";
  return {nodes:nm,bytes:bytes};
}
function flame(){
  prepFlame();
  var el=$("flame");
  el.onclick=function(e){var t=e.target.closest("div[data-i]");if(!t)return;var i=+t.getAttribute("data-i");
    setFocus(i===focus&&i?F.par[i]:i);
    var sid=null;D.sites.forEach(function(s){if(s.leaf===i)sid=s.id;});if(sid!==null)showStack(sid,lshort(i));};
  el.onmousemove=function(e){var t=e.target.closest("div[data-i]");if(!t){hideTip();return;}var i=+t.getAttribute("data-i");
    showTip(e,esc(lfull(i))+"<br>"+hb(F.bytes[i])+" ("+(100*F.bytes[i]/(F.bytes[0]||1)).toFixed(1)+"%) in "+F.count[i]+" allocations"+
      (F.kind[i]===2?" &middot; Python":F.kind[i]===1?" &middot; native":""));};
  el.onmouseleave=hideTip;
  $("crumbs").onclick=function(e){var a=e.target.closest("a[data-i]");if(a)setFocus(+a.getAttribute("data-i"));};
  $("reset").onclick=function(){setFocus(0);};
  var timer=null;$("search").oninput=function(){var v=this.value;clearTimeout(timer);timer=setTimeout(function(){search(v);},150);};
  if(D.flame.pruned)$("flamenote").textContent+=" "+D.flame.pruned+" small call paths are folded into their callers.";
  renderFlame();
}
// Sortable table: cols = [{key,label,num,fmt,title}], rows = array of objects.
// At most `shown` rows go into the DOM (a long table costs layout time on
// every page load); the last row offers the rest.
function table(id,cols,rows,onclick){
  var el=$(id),sortKey=null,dir=1,shown=300;
  function render(){
    var h="<thead><tr>";cols.forEach(function(c,i){h+="<th data-c='"+i+"' class='"+(c.num?"n ":"")+(sortKey===c.key?(dir>0?"asc":"desc"):"")+"'>"+c.label+"</th>";});
    h+="</tr></thead><tbody>";
    var n=Math.min(rows.length,shown);
    for(var ri=0;ri<n;ri++){var r=rows[ri];h+="<tr data-r='"+ri+"'>";cols.forEach(function(c){var v=r[c.key];
      h+="<td"+(c.num?" class='n'":c.cls?" class='"+esc(c.cls(r))+"'":"")+(c.title?" title='"+esc(c.title(r))+"'":"")+">"+esc(c.fmt?c.fmt(v,r):v)+"</td>";});h+="</tr>";}
    if(rows.length>n)h+="<tr class='more'><td colspan='"+cols.length+"'><a href='#'>show all "+rows.length.toLocaleString()+" rows</a></td></tr>";
    el.innerHTML=h+"</tbody>";
  }
  el.onclick=function(e){var th=e.target.closest("th");
    if(e.target.closest("tr.more")){e.preventDefault();shown=Infinity;render();return;}
    if(th){var c=cols[+th.getAttribute("data-c")];if(sortKey===c.key)dir=-dir;else{sortKey=c.key;dir=c.num?-1:1;}
      rows.sort(function(a,b){var x=a[c.key],y=b[c.key];return (x<y?-1:x>y?1:0)*dir;});render();return;}
    var tr=e.target.closest("tr[data-r]");if(tr){Array.prototype.forEach.call(el.querySelectorAll("tr.sel"),function(x){x.classList.remove("sel");});
      tr.classList.add("sel");onclick(rows[+tr.getAttribute("data-r")]);}};
  render();
  return {setRows:function(r){rows=r.slice();if(sortKey){var c=null;cols.forEach(function(x){if(x.key===sortKey)c=x;});
    rows.sort(function(a,b){var x=a[c.key],y=b[c.key];return (x<y?-1:x>y?1:0)*dir;});}render();},rows:function(){return rows;}};
}
function fmtAge(v){if(v===null)return "-";var u=timeUnit(v);return (v*u.f).toFixed(v*u.f>=100?0:2)+" "+u.u;}
function allocNote(){$("allocnote").textContent=D.allocs.length<D.allocs_total?("Showing the "+D.allocs.length.toLocaleString()+" largest of "+D.allocs_total.toLocaleString()+" live allocations."):(D.allocs_total+" live allocations.");}
function mktables(){
  var lt=D.meta.live_total||1;
  D.sites.forEach(function(s,i){s.rank=i+1;});
  tables.sites=table("sites",[{key:"rank",label:"#",num:1},{key:"bytes",label:"live bytes",num:1,fmt:hb},{key:"count",label:"allocations",num:1},
    {key:"bytes",label:"%",num:1,fmt:function(v){return (100*v/lt).toFixed(1)+"%";}},{key:"id",label:"stack",num:1},
    {key:"top",label:"site",title:function(r){return r.full;}},{key:"lib",label:"library"}],
    D.sites,function(s){showStack(s.id,hb(s.bytes)+" in "+s.count+" allocations");});
  allocNote();
  tables.allocs=table("allocs",[{key:"s",label:"size",num:1,fmt:hb},{key:"d",label:"device",num:1},{key:"api",label:"API"},{key:"mt",label:"type"},
    {key:"age",label:"age",num:1,fmt:fmtAge},{key:"seq",label:"seq",num:1},{key:"a",label:"address"},{key:"top",label:"site"},{key:"lib",label:"library"}],
    D.allocs,function(a){showStack(a.site,hb(a.s)+" at "+a.a);});
  tables.apis=table("apis",[{key:"api",label:"API"},{key:"alloc",label:"alloc",num:1},{key:"free",label:"free",num:1},{key:"oom",label:"oom",num:1},
    {key:"failed",label:"failed",num:1},{key:"other",label:"other",num:1},{key:"total",label:"total",num:1}],D.apis,function(){});
}
function baseline(){
  var B=D.baseline;if(!B)return;$("basesec").style.display="block";
  $("basenote").textContent="Baseline "+B.name+": "+hb(B.old_bytes)+" live; this bundle: "+hb(B.new_bytes)+" ("+hbs(B.new_bytes-B.old_bytes)+
    "). Call sites matched by their frames (function, file, line), largest growth first.";
  tables.base=table("base",[{key:"delta",label:"change",num:1,fmt:hbs},{key:"old",label:"baseline",num:1,fmt:hb},{key:"new",label:"this",num:1,fmt:hb},
    {key:"status",label:"status",cls:function(r){return r.status;}},{key:"top",label:"site"},{key:"lib",label:"library"}],B.sites,function(r){
    var el=$("stack"),h="<div><b>"+esc(r.status+" "+hbs(r.delta))+"</b></div>";
    r.frames.forEach(function(l){h+="<div class='"+(l.lastIndexOf("py ",0)===0?"py":"nat")+"'>"+esc(l)+"</div>";});el.className="";el.innerHTML=h;});
}
// report.html#gmr-selftest=TERM: what a user's clicks would show, for the Chromium test.
function selftest(term){
  var r={root_bytes:+$("flame").querySelector("div[data-i='0']").getAttribute("data-bytes"),
    sites_before:tables.sites.rows().length,allocs_before:tables.allocs.rows().length};
  var kids=[];for(var i=1;i<F.n;i=F.end[i])kids.push(i);  // children of the root
  var pick=null;kids.forEach(function(k){if(pick===null&&F.bytes[k]<F.bytes[0])pick=k;});if(pick===null&&kids.length)pick=kids[0];
  if(pick!==null){var el=$("flame").querySelector("div[data-i='"+pick+"']");
    el.dispatchEvent(new MouseEvent("click",{bubbles:true}));
    r.clicked={node:pick,bytes:F.bytes[pick],label:lfull(pick),kind:F.kind[pick]};
    r.sites_after=tables.sites.rows().map(function(s){return s.id;});
    r.sites_after_dom=$("sites").querySelectorAll("tbody tr[data-r]").length;
    r.allocs_after=tables.allocs.rows().length;r.allocs_after_dom=$("allocs").querySelectorAll("tbody tr[data-r]").length;
    r.crumbs=$("crumbs").textContent;}
  if(term){setFocus(0);var s=search(term);r.search={term:term,nodes:s.nodes,bytes:s.bytes,highlighted:$("flame").querySelectorAll("div.hit").length};}
  r.ticks=Array.prototype.map.call(document.querySelectorAll("#charts text.tick"),function(t){return t.textContent;});
  r.ooms=document.querySelectorAll("#charts line.oom").length;r.ooms_recovered=document.querySelectorAll("#charts line.oom-rec").length;
  r.oom_verdicts=Array.prototype.map.call(document.querySelectorAll("#charts line[data-verdict]"),function(l){return l.getAttribute("data-verdict");});
  r.outcome=$("outcome")?$("outcome").textContent:null;
  $("gmr-test").textContent=JSON.stringify(r);
}
try{
  tip=$("tip");
  D=JSON.parse($("gmr-data").textContent);
  $("title").textContent="gpumemrec: "+(D.meta.api?D.meta.api+" failed ("+hb(D.meta.requested)+")":D.meta.reason+" dump");
  $("subtitle").textContent=D.meta.bundle+" \u2014 "+utc(D.meta.timestamp);
  failure();charts();flame();mktables();baseline();
  void document.body.offsetHeight;  // lay the page out: part of the render time
  var ms=(window.performance&&performance.now)?performance.now():0;
  status.textContent="gmr-render-ok";status.setAttribute("data-render-ms",(ms-T0).toFixed(1));status.setAttribute("data-load-ms",ms.toFixed(1));
  var m=/^#gmr-selftest=?(.*)$/.exec(location.hash);if(m)selftest(decodeURIComponent(m[1]));
}catch(e){status.textContent="gmr-render-error: "+(e&&e.message?e.message:e);status.style.display="block";}
})();
</script></body></html>
)HTML";

}  // namespace gpumemrec::cli

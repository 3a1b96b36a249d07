// The self-contained HTML page of `gpumemrec html`: inline CSS and JS, no
// network. The data (downsampled curves, aggregated sites, capped tables)
// replaces @@DATA@@ inside a <script type="application/json"> element; the
// page writes "gmr-render-ok" (or "gmr-render-error: ...") into #gmr-status
// when it has rendered, which the Chromium test reads back with --dump-dom.
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
#treemap{position:relative;width:100%;height:360px;background:#eef0f3;overflow:hidden}
#treemap div{position:absolute;box-sizing:border-box;border:1px solid #fff;overflow:hidden;font-size:11px;
  color:#10161c;padding:2px 3px;cursor:pointer;white-space:nowrap;text-overflow:ellipsis}
#treemap div:hover{outline:2px solid #1f2933;z-index:2}
table{border-collapse:collapse;width:100%;font-size:12px}
th,td{padding:3px 6px;border-bottom:1px solid #eef0f3;text-align:left;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th{cursor:pointer;background:#f3f4f6;position:sticky;top:0;user-select:none}
th.asc::after{content:" \25B2"} th.desc::after{content:" \25BC"}
tbody tr{cursor:pointer} tbody tr:hover{background:#f0f6ff} tr.sel{background:#dbeafe}
.scroll{max-height:420px;overflow:auto}
#stack{font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;word-break:break-all}
#stack .py{color:#1d4ed8} #stack .nat{color:#374151}
aside{position:sticky;top:8px;align-self:start}
.note{color:#6b7280;font-size:12px}
#tip{position:fixed;pointer-events:none;background:#1f2933;color:#fff;padding:3px 6px;border-radius:3px;font-size:11px;display:none;z-index:9}
</style></head><body>
<header><h1 id="title">gpumemrec report</h1><div class="sub" id="subtitle"></div></header>
<main><div>
<section><h2>What failed</h2><div id="failure"></div></section>
<section><h2>Memory over time</h2><div id="charts"></div>
<div class="note" id="curvenote"></div></section>
<section><h2>Live allocations at the dump, by call site</h2><div id="treemap"></div>
<div class="note">Area = live bytes. Click a box for its stack.</div></section>
<section><h2>Call sites</h2><div class="scroll"><table id="sites"></table></div></section>
<section><h2>Live allocations</h2><div class="note" id="allocnote"></div>
<div class="scroll"><table id="allocs"></table></div></section>
<section><h2>Events by API</h2><table id="apis"></table></section>
</div>
<aside><section><h2>Stack</h2><div id="stack" class="note">Click a call site, a box or an allocation.</div></section></aside>
</main>
<div id="tip"></div>
<div id="gmr-status" style="display:none">gmr-render-pending</div>
<script type="application/json" id="gmr-data">)HTML";

inline constexpr const char* kHtmlTail = R"HTML(</script>
<script>
(function(){
"use strict";
var status=document.getElementById("gmr-status");
window.addEventListener("error",function(e){status.textContent="gmr-render-error: "+(e.message||"error");});
function $(id){return document.getElementById(id);}
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c];});}
function hb(n){if(n===null||n===undefined)return "?";var u=["B","KiB","MiB","GiB","TiB","PiB"],i=0;
  while(n>=1024&&i<u.length-1){n/=1024;i++;}return i===0?n+" B":(n>=100?n.toFixed(0):n>=10?n.toFixed(1):n.toFixed(2))+" "+u[i];}
function utc(t){return t?new Date(t*1000).toISOString().replace("T"," ").replace(/\.\d+Z$/,"Z"):"-";}
function hue(id){var h=0,s=String(id);for(var i=0;i<s.length;i++)h=(h*31+s.charCodeAt(i))>>>0;return h%360;}
var D,tip;
function showTip(e,html){tip.innerHTML=html;tip.style.display="block";tip.style.left=(e.clientX+12)+"px";tip.style.top=(e.clientY+12)+"px";}
function hideTip(){tip.style.display="none";}
function showStack(id,label){
  var el=$("stack"),lines=D.stacks[String(id)];
  var h="<div><b>"+esc(label||("stack "+id))+"</b></div>";
  if(!lines){h+="<div class='note'>"+(id?"stack "+id+" not recorded":"no stack recorded")+"</div>";}
  else if(!lines.length){h+="<div class='note'>empty stack</div>";}
  else{for(var i=0;i<lines.length;i++){var py=lines[i].lastIndexOf("py ",0)===0;
    h+="<div class='"+(py?"py":"nat")+"'>"+esc(lines[i])+"</div>";}}
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
  kv("reason",esc(m.reason));kv("time",utc(m.timestamp));
  kv("process","pid "+m.pid+(m.host?" on "+esc(m.host):"")+(m.rank!==null?" (rank "+m.rank+")":""));
  if(m.cmdline)kv("command",esc(m.cmdline));
  kv("events in the ring",D.event_count.toLocaleString());
  h+="</div>";
  if(m.stack_id){h+="<div style='margin-top:6px'><a href='#' id='failstack'>stack of the failing call</a></div>";}
  $("failure").innerHTML=h;
  var fs=$("failstack");if(fs)fs.onclick=function(e){e.preventDefault();showStack(m.stack_id,"failing call");};
}
function charts(){
  var box=$("charts"),W=900,H=230,L=70,R=12,T=12,B=28,html="";
  if(!D.curves.length){box.innerHTML="<div class='note'>No events in the ring.</div>";return;}
  D.curves.forEach(function(c,ci){
    var pts=c.points,t0=D.t_min,t1=D.t_max;if(t1<=t0)t1=t0+1;
    var ymax=c.peak;if(c.total&&c.total>ymax)ymax=c.total;if(!ymax)ymax=1;ymax*=1.05;
    function X(t){return L+(t-t0)/(t1-t0)*(W-L-R);} function Y(v){return T+(1-v/ymax)*(H-T-B);}
    var d="";for(var i=0;i<pts.length;i++){d+=(i?"L":"M")+X(pts[i][0]).toFixed(1)+" "+Y(pts[i][1]).toFixed(1);}
    var s="<svg class='chart' data-dev='"+c.device+"' viewBox='0 0 "+W+" "+H+"' xmlns='http://www.w3.org/2000/svg'>";
    s+="<rect x='"+L+"' y='"+T+"' width='"+(W-L-R)+"' height='"+(H-T-B)+"' fill='#fbfcfd' stroke='#e1e4e8'/>";
    for(var g=0;g<=4;g++){var v=ymax*g/4,y=Y(v);s+="<line x1='"+L+"' x2='"+(W-R)+"' y1='"+y+"' y2='"+y+"' stroke='#eef0f3'/>"+
      "<text x='"+(L-6)+"' y='"+(y+4)+"' text-anchor='end'>"+hb(Math.round(v))+"</text>";}
    for(var k=0;k<=5;k++){var t=t0+(t1-t0)*k/5;s+="<text x='"+X(t)+"' y='"+(H-10)+"' text-anchor='"+(k===0?"start":k===5?"end":"middle")+"'>"+(t-t0).toFixed(2)+" s</text>";}
    if(c.total){var yt=Y(c.total);s+="<line x1='"+L+"' x2='"+(W-R)+"' y1='"+yt+"' y2='"+yt+"' stroke='#9ca3af' stroke-dasharray='4 3'/>"+
      "<text x='"+(W-R-4)+"' y='"+(yt-4)+"' text-anchor='end'>device total "+hb(c.total)+"</text>";}
    if(d){s+="<path d='"+d+" L"+X(pts[pts.length-1][0]).toFixed(1)+" "+Y(0)+" L"+X(pts[0][0]).toFixed(1)+" "+Y(0)+"Z' fill='hsla(210,80%,55%,0.15)'/>";
      s+="<path d='"+d+"' fill='none' stroke='hsl(210,80%,45%)' stroke-width='1.5'/>";}
    D.ooms.forEach(function(o){if(o.device!==c.device)return;var x=X(o.t);
      s+="<line x1='"+x+"' x2='"+x+"' y1='"+T+"' y2='"+(H-B)+"' stroke='#d92d20' stroke-width='2'><title>OOM: "+esc(o.api)+"("+hb(o.size)+")</title></line>"+
      "<text x='"+(x-4)+"' y='"+(T+28)+"' text-anchor='end' style='fill:#d92d20;font-weight:600'>OOM "+hb(o.size)+"</text>";});
    s+="<line class='cursor' x1='0' x2='0' y1='"+T+"' y2='"+(H-B)+"' stroke='#111' stroke-width='0.5' visibility='hidden'/>";
    s+="<text x='"+(L+6)+"' y='"+(T+14)+"' style='font-weight:600;fill:#1f2933'>device "+c.device+" &mdash; peak "+hb(c.peak)+"</text></svg>";
    html+=s;
  });
  box.innerHTML=html;
  $("curvenote").textContent=D.curve_note;
  Array.prototype.forEach.call(box.querySelectorAll("svg"),function(svg){
    var dev=+svg.getAttribute("data-dev"),c=null;D.curves.forEach(function(x){if(x.device===dev)c=x;});
    var cur=svg.querySelector(".cursor");
    svg.addEventListener("mousemove",function(e){
      var r=svg.getBoundingClientRect(),x=(e.clientX-r.left)/r.width*W,t0=D.t_min,t1=D.t_max>D.t_min?D.t_max:D.t_min+1;
      var t=t0+(x-L)/(W-L-R)*(t1-t0),p=c.points,lo=0,hi=p.length-1;
      if(!p.length)return; while(lo<hi){var mid=(lo+hi+1)>>1;if(p[mid][0]<=t)lo=mid;else hi=mid-1;}
      cur.setAttribute("x1",x);cur.setAttribute("x2",x);cur.setAttribute("visibility","visible");
      showTip(e,"t = "+(p[lo][0]-t0).toFixed(3)+" s<br>"+hb(p[lo][1]));});
    svg.addEventListener("mouseleave",function(){cur.setAttribute("visibility","hidden");hideTip();});
  });
}
function treemap(){
  var el=$("treemap"),W=el.clientWidth||800,H=el.clientHeight||360;
  var items=D.sites.slice(0,300).filter(function(s){return s.bytes>0;});
  if(!items.length){el.innerHTML="<div style='position:static;border:0;padding:8px'>No live allocations.</div>";return;}
  var total=0;items.forEach(function(s){total+=s.bytes;});
  var rects=[];
  // Squarified layout.
  function worst(row,side,scale){var s=0,mx=0,mn=Infinity;row.forEach(function(r){var a=r.bytes*scale;s+=a;mx=Math.max(mx,a);mn=Math.min(mn,a);});
    var s2=s*s,w2=side*side;return Math.max(w2*mx/s2,s2/(w2*mn));}
  function layout(list,x,y,w,h){
    var scale=w*h/list.reduce(function(a,r){return a+r.bytes;},0),i=0;
    while(i<list.length){
      var side=Math.min(w,h),row=[list[i]],j=i+1;
      while(j<list.length&&worst(row.concat([list[j]]),side,scale)<=worst(row,side,scale)){row.push(list[j]);j++;}
      var area=row.reduce(function(a,r){return a+r.bytes*scale;},0);
      if(w>=h){var cw=area/h,cy=y;row.forEach(function(r){var rh=r.bytes*scale/cw;rects.push([r,x,cy,cw,rh]);cy+=rh;});x+=cw;w-=cw;}
      else{var ch=area/w,cx=x;row.forEach(function(r){var rw=r.bytes*scale/ch;rects.push([r,cx,y,rw,ch]);cx+=rw;});y+=ch;h-=ch;}
      i=j;
    }
  }
  layout(items,0,0,W,H);
  var h="";
  rects.forEach(function(q,i){var s=q[0];
    h+="<div data-i='"+D.sites.indexOf(s)+"' style='left:"+q[1].toFixed(1)+"px;top:"+q[2].toFixed(1)+"px;width:"+q[3].toFixed(1)+
      "px;height:"+q[4].toFixed(1)+"px;background:hsl("+hue(s.id)+",65%,78%)'>"+(q[3]>50&&q[4]>14?esc(hb(s.bytes)+" "+s.top):"")+"</div>";});
  el.innerHTML=h;
  el.onclick=function(e){var t=e.target.closest("div[data-i]");if(!t)return;var s=D.sites[+t.getAttribute("data-i")];showStack(s.id,hb(s.bytes)+" in "+s.count+" allocations");};
  el.onmousemove=function(e){var t=e.target.closest("div[data-i]");if(!t){hideTip();return;}var s=D.sites[+t.getAttribute("data-i")];
    showTip(e,esc(hb(s.bytes)+" ("+(100*s.bytes/D.meta.live_total).toFixed(1)+"%) in "+s.count+" allocations")+"<br>"+esc(s.top));};
  el.onmouseleave=hideTip;
}
// Sortable table: cols = [{key,label,num,fmt}], rows = array of objects.
function table(id,cols,rows,onclick){
  var el=$(id),sortKey=null,dir=1;
  function render(){
    var h="<thead><tr>";cols.forEach(function(c,i){h+="<th data-c='"+i+"' class='"+(c.num?"n ":"")+(sortKey===c.key?(dir>0?"asc":"desc"):"")+"'>"+c.label+"</th>";});
    h+="</tr></thead><tbody>";
    rows.forEach(function(r,ri){h+="<tr data-r='"+ri+"'>";cols.forEach(function(c){var v=r[c.key];h+="<td"+(c.num?" class='n'":"")+">"+esc(c.fmt?c.fmt(v,r):v)+"</td>";});h+="</tr>";});
    el.innerHTML=h+"</tbody>";
  }
  el.onclick=function(e){var th=e.target.closest("th");
    if(th){var c=cols[+th.getAttribute("data-c")];if(sortKey===c.key)dir=-dir;else{sortKey=c.key;dir=c.num?-1:1;}
      rows.sort(function(a,b){var x=a[c.key],y=b[c.key];return (x<y?-1:x>y?1:0)*dir;});render();return;}
    var tr=e.target.closest("tr[data-r]");if(tr){Array.prototype.forEach.call(el.querySelectorAll("tr.sel"),function(x){x.classList.remove("sel");});
      tr.classList.add("sel");onclick(rows[+tr.getAttribute("data-r")]);}};
  render();
}
function tables(){
  var lt=D.meta.live_total||1;
  table("sites",[{key:"rank",label:"#",num:1},{key:"bytes",label:"live bytes",num:1,fmt:hb},{key:"count",label:"allocations",num:1},
    {key:"bytes",label:"%",num:1,fmt:function(v){return (100*v/lt).toFixed(1)+"%";}},{key:"id",label:"stack",num:1},{key:"top",label:"top frame"}],
    D.sites.map(function(s,i){s.rank=i+1;return s;}),function(s){showStack(s.id,hb(s.bytes)+" in "+s.count+" allocations");});
  $("allocnote").textContent=D.allocs.length<D.allocs_total?("Showing the "+D.allocs.length.toLocaleString()+" largest of "+D.allocs_total.toLocaleString()+" live allocations."):(D.allocs_total+" live allocations.");
  table("allocs",[{key:"s",label:"size",num:1,fmt:hb},{key:"d",label:"device",num:1},{key:"api",label:"API"},{key:"mt",label:"type"},
    {key:"age",label:"age (s)",num:1,fmt:function(v){return v===null?"-":v.toFixed(3);}},{key:"seq",label:"seq",num:1},{key:"a",label:"address"},{key:"top",label:"site"}],
    D.allocs,function(a){showStack(a.site,hb(a.s)+" at "+a.a);});
  table("apis",[{key:"api",label:"API"},{key:"alloc",label:"alloc",num:1},{key:"free",label:"free",num:1},{key:"oom",label:"oom",num:1},
    {key:"failed",label:"failed",num:1},{key:"other",label:"other",num:1},{key:"total",label:"total",num:1}],D.apis,function(){});
}
try{
  tip=$("tip");
  D=JSON.parse($("gmr-data").textContent);
  $("title").textContent="gpumemrec: "+(D.meta.api?D.meta.api+" failed ("+hb(D.meta.requested)+")":D.meta.reason+" dump");
  $("subtitle").textContent=D.meta.bundle+" \u2014 "+utc(D.meta.timestamp);
  failure();charts();treemap();tables();
  status.textContent="gmr-render-ok";
}catch(e){status.textContent="gmr-render-error: "+(e&&e.message?e.message:e);status.style.display="block";}
})();
</script></body></html>
)HTML";

}  // namespace gpumemrec::cli

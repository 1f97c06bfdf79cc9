-- deckbuild: figures and their cross-references, in the HTML structure Quarto 1.4+ writes
-- for revealjs (Quarto's "float" figures; see https://quarto.org/docs/authoring/cross-references.html).
--
--   ![Caption](x.png){#fig-a}   a figure numbered "Figure N: Caption"
--   ![](x.png){#fig-a}          numbered, no caption: "Figure N"
--   ::: {#fig-a} ... :::        numbered; the div's last paragraph is its caption
--   ![Caption](x.png)           a captioned figure without a number
--   ![](x.png){fig-align=left}  an image alone in its paragraph, aligned as a figure
--   @fig-a, [-@fig-a], [Fig. @fig-a]   a link "Figure N" (N, "Fig. N") to the figure
--
-- Output for a labelled figure (Quarto's float, src/resources/filters/customnodes/
-- floatreftarget.lua):
--         <div id="fig-a" class="quarto-float quarto-figure quarto-figure-center">
--           <figure class="quarto-float quarto-float-fig">
--             <div aria-describedby="fig-a-caption"> image </div>
--             <figcaption id="fig-a-caption" class="quarto-float-caption-bottom
--               quarto-float-caption quarto-float-fig [quarto-uncaptioned]">Figure N: ...</figcaption>
--           </figure></div>
-- for an unlabelled one (Quarto's renderHtmlFigure, src/resources/filters/layout/html.lua):
--         <div class="quarto-figure quarto-figure-center"><figure>
--           <p> image </p><figcaption>Caption</figcaption></figure></div>
-- and for an uncaptioned image with fig-align, or the image of a cell's display output
-- (render_html_fixups, src/resources/filters/quarto-post/html.lua), its paragraph wrapped
-- as <div [class="quarto-figure quarto-figure-X"]><figure><p> image </p></figure></div>;
-- an image's fig-align becomes its classes quarto-figure quarto-figure-X. References:
-- <a href="#fig-a" class="quarto-xref">Figure N</a>; an unknown @fig- label shows as
-- bold "?@fig-a" (deckbuild warns about it with its file and line).

local TITLE = "Figure"
-- fig-cap-location (metadata deckbuild-fig-cap-location): bottom, top or margin
local cap_location = "bottom"
local NBSP = "\u{a0}"
local number = {}
local eq_count = 0

local function is_fig(id)
  return id ~= nil and id:match("^fig%-") ~= nil
end

local function count(doc)
  local n = 0
  local function note(el)
    if is_fig(el.identifier) and not number[el.identifier] then
      n = n + 1
      number[el.identifier] = n
    end
  end
  doc:walk({ traverse = "topdown", Figure = note, Div = note, Image = note })
end

local function strip_captions(blocks)
  return pandoc.Blocks(blocks):walk({ Image = function(img)
    img.caption = {}
    return img
  end })
end

local function float(id, content, caption, align)
  local label = pandoc.Inlines({})
  if is_fig(id) then
    label:insert(pandoc.Str(TITLE .. NBSP .. number[id]))
    if #caption > 0 then
      label:extend({ pandoc.Str(":"), pandoc.Space() })
    end
  end
  label:extend(caption)
  local cap_id = is_fig(id) and (id .. "-caption") or ""
  local cap_classes = "quarto-float-caption-" .. cap_location .. " quarto-float-caption quarto-float-fig"
  if #caption == 0 then cap_classes = cap_classes .. " quarto-uncaptioned" end
  local described = cap_id ~= "" and { ["aria-describedby"] = cap_id } or {}
  local id_attr = cap_id ~= "" and (' id="' .. cap_id .. '"') or ""
  local body = pandoc.Div(strip_captions(content), pandoc.Attr("", {}, described))
  local cap = {
    pandoc.RawBlock("html", "<figcaption" .. id_attr .. ' class="' .. cap_classes .. '">'),
    pandoc.Plain(label),
    pandoc.RawBlock("html", "</figcaption>"),
  }
  local blocks = { pandoc.RawBlock("html", '<figure class="quarto-float quarto-float-fig">') }
  if cap_location == "top" then
    for _, b in ipairs(cap) do blocks[#blocks + 1] = b end
    blocks[#blocks + 1] = body
  else
    blocks[#blocks + 1] = body
    for _, b in ipairs(cap) do blocks[#blocks + 1] = b end
  end
  blocks[#blocks + 1] = pandoc.RawBlock("html", "</figure>")
  return pandoc.Div(blocks, pandoc.Attr(id, { "quarto-float", "quarto-figure", "quarto-figure-" .. (align or "center") }))
end

-- the alignment an image asks for (fig-align, or the classes it was given for it)
local function image_align(img)
  local align = img.attributes["fig-align"]
  if align and align ~= "default" then return align end
  for _, class in ipairs(img.classes) do
    local a = class:match("^quarto%-figure%-(%a+)$")
    if a then return a end
  end
  return nil
end

-- <figure> around blocks, in a div with the alignment classes when there is one
local function plain_figure(id, blocks, caption, align)
  local content = pandoc.Blocks({ pandoc.RawBlock("html", "<figure>") })
  local cap = nil
  if caption and #caption > 0 then
    cap = pandoc.Inlines({ pandoc.RawInline("html", "<figcaption>") })
    cap:extend(caption)
    cap:insert(pandoc.RawInline("html", "</figcaption>"))
  end
  if cap and cap_location == "top" then content:insert(pandoc.Plain(cap)) end
  content:extend(blocks)
  if cap and cap_location ~= "top" then content:insert(pandoc.Plain(cap)) end
  content:insert(pandoc.RawBlock("html", "</figure>"))
  local classes = align and { "quarto-figure", "quarto-figure-" .. align } or {}
  return pandoc.Div(content, pandoc.Attr(id or "", classes))
end

-- pandoc makes a captioned image alone in its paragraph a Figure (with the image's id):
-- a numbered float when labelled fig-, else a plain figure, centred unless fig-align says
local function figure(fig)
  local caption = pandoc.utils.blocks_to_inlines(fig.caption.long)
  local align = nil
  local blocks = strip_captions(fig.content):walk({ Image = function(img)
    align = align or image_align(img)
  end })
  if is_fig(fig.identifier) then return float(fig.identifier, fig.content, caption, align) end
  blocks = blocks:map(function(b) return b.t == "Plain" and pandoc.Para(b.content) or b end)
  return plain_figure(fig.identifier, blocks, caption, align or "center")
end

-- the image of a paragraph holding one image (or one linked image) and nothing else,
-- and whether it is linked
local function only_image(p)
  local found, linked = nil, false
  for _, inline in ipairs(p.content) do
    local img = inline.t == "Image" and inline
      or (inline.t == "Link" and #inline.content == 1 and inline.content[1].t == "Image"
          and inline.content[1])
    if img and not found then
      found, linked = img, inline.t == "Link"
    elseif inline.t ~= "Space" and inline.t ~= "SoftBreak" then
      return nil
    end
  end
  return found, linked
end

-- an image without caption alone in its paragraph: a float when labelled fig-, a figure
-- when it has an alignment
local function para(p)
  local img, linked = only_image(p)
  if not img then return nil end
  if is_fig(img.identifier) and not linked then
    local id = img.identifier
    img.identifier = ""
    return float(id, { pandoc.Plain({ img }) }, pandoc.Inlines({}), image_align(img))
  end
  local align = image_align(img)
  if align then return plain_figure("", { p }, nil, align) end
  return nil
end

-- an image's fig-align becomes its classes (quarto-figure quarto-figure-X)
local function image(img)
  local align = img.attributes["fig-align"]
  if align == nil then return nil end
  img.attributes["fig-align"] = nil
  if align ~= "default" and not img.classes:includes("quarto-figure-" .. align) then
    img.classes:extend({ "quarto-figure", "quarto-figure-" .. align })
  end
  return img
end

-- a cell's display output whose paragraph holds an image: that paragraph in a <figure>
local function cell_output(d)
  if not d.classes:includes("cell-output-display") then return nil end
  if not d.classes:includes("cell-output") then d.classes:insert(1, "cell-output") end
  for i, block in ipairs(d.content) do
    if block.t == "Para" and only_image(block) then
      d.content[i] = plain_figure("", { block }, nil, image_align(only_image(block)))
      return d
    end
  end
  return d
end

local function div(d)
  if not is_fig(d.identifier) then return cell_output(d) end
  if d.classes:includes("quarto-float") then return nil end
  local content = pandoc.Blocks(d.content)
  local caption = pandoc.Inlines({})
  local last = content[#content]
  if #content > 1 and last and (last.t == "Para" or last.t == "Plain") then
    caption = last.content
    content:remove(#content)
  end
  return float(d.identifier, content, caption)
end

-- labelled display maths ($$ ... $$ {#eq-a}): numbered in document order, as Quarto
-- numbers them (src/resources/filters/crossref/equations.lua): the formula gets \tag{N}
-- and a span with the label's id around it
local EQ_TITLE = "Equation"
local function equation_label(el)
  return el and el.t == "Str" and el.text:match("^{#(eq%-[%w%-_:.]+)}$")
end

local function equations(blocks_el)
  local content = blocks_el.content
  local out, i, changed = pandoc.Inlines({}), 1, false
  while i <= #content do
    local el = content[i]
    local j = (content[i + 1] and content[i + 1].t == "Space") and i + 2 or i + 1
    local id = el.t == "Math" and el.mathtype == "DisplayMath" and equation_label(content[j])
    if id then
      if not number[id] then
        eq_count = eq_count + 1
        number[id] = eq_count
      end
      local text = el.text:gsub("%s+$", "") .. "\n\\tag{" .. number[id] .. "}"
      out:insert(pandoc.Span({ pandoc.Math("DisplayMath", text) }, pandoc.Attr(id)))
      i, changed = j + 1, true
    else
      out:insert(el)
      i = i + 1
    end
  end
  if changed then
    blocks_el.content = out
    return blocks_el
  end
end

local function reference(c)
  local id = c.id:sub(1, 1):lower() .. c.id:sub(2)
  if not number[id] then
    return { pandoc.Strong({ pandoc.Str("?@" .. c.id) }) }
  end
  local title = id:match("^eq%-") and EQ_TITLE or TITLE
  local text
  if c.mode == "SuppressAuthor" then
    text = pandoc.Inlines({ pandoc.Str(tostring(number[id])) })
  elseif #c.prefix > 0 then
    text = pandoc.Inlines(c.prefix)
    text:insert(pandoc.Str(NBSP .. number[id]))
  else
    text = pandoc.Inlines({ pandoc.Str(title .. NBSP .. number[id]) })
  end
  return { pandoc.Link(text, "#" .. id, "", pandoc.Attr("", { "quarto-xref" })) }
end

local function cite(el)
  for _, c in ipairs(el.citations) do
    if not (c.id:match("^[Ff]ig%-") or c.id:match("^[Ee]q%-")) then return nil end
  end
  local out = pandoc.Inlines({})
  for i, c in ipairs(el.citations) do
    if i > 1 then out:extend({ pandoc.Str(";"), pandoc.Space() }) end
    out:extend(reference(c))
  end
  return out
end

-- with fig-cap-location: margin, Quarto marks a figure's image margin-caption
local function margin_image(img)
  if cap_location == "margin" and img.classes:includes("quarto-figure")
      and not img.classes:includes("margin-caption") then
    img.classes:insert(1, "margin-caption")
    return img
  end
end

function Pandoc(doc)
  local loc = doc.meta["deckbuild-fig-cap-location"]
  cap_location = loc and pandoc.utils.stringify(loc) or "bottom"
  count(doc)
  doc = doc:walk({ traverse = "topdown", Para = equations, Plain = equations })
  doc = doc:walk({ Figure = figure, Para = para, Div = div, Cite = cite })
  return doc:walk({ Image = image }):walk({ Image = margin_image })
end

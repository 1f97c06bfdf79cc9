-- deckbuild: figures and their cross-references, in the HTML structure Quarto 1.4+ writes
-- for revealjs (Quarto's "float" figures; see https://quarto.org/docs/authoring/cross-references.html).
--
--   ![Caption](x.png){#fig-a}   a figure numbered "Figure N: Caption"
--   ![](x.png){#fig-a}          numbered, no caption: "Figure N"
--   ::: {#fig-a} ... :::        numbered; the div's last paragraph is its caption
--   ![Caption](x.png)           a captioned figure without a number
--   @fig-a, [-@fig-a], [Fig. @fig-a]   a link "Figure N" (N, "Fig. N") to the figure
--
-- Output: <div id="fig-a" class="quarto-float quarto-figure quarto-figure-center">
--           <figure class="quarto-float quarto-float-fig">
--             <div aria-describedby="fig-a-caption"> image </div>
--             <figcaption id="fig-a-caption" class="quarto-float-caption-bottom
--               quarto-float-caption quarto-float-fig [quarto-uncaptioned]">Figure N: ...</figcaption>
--           </figure></div>
-- and references <a href="#fig-a" class="quarto-xref">Figure N</a>; an unknown @fig- label
-- shows as bold "?@fig-a" (deckbuild warns about it with its file and line).

local TITLE = "Figure"
local NBSP = "\u{a0}"
local number = {}

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

local function float(id, content, caption)
  local label = pandoc.Inlines({})
  if is_fig(id) then
    label:insert(pandoc.Str(TITLE .. NBSP .. number[id]))
    if #caption > 0 then
      label:extend({ pandoc.Str(":"), pandoc.Space() })
    end
  end
  label:extend(caption)
  local cap_id = is_fig(id) and (id .. "-caption") or ""
  local cap_classes = "quarto-float-caption-bottom quarto-float-caption quarto-float-fig"
  if #caption == 0 then cap_classes = cap_classes .. " quarto-uncaptioned" end
  local described = cap_id ~= "" and { ["aria-describedby"] = cap_id } or {}
  local id_attr = cap_id ~= "" and (' id="' .. cap_id .. '"') or ""
  return pandoc.Div({
    pandoc.RawBlock("html", '<figure class="quarto-float quarto-float-fig">'),
    pandoc.Div(strip_captions(content), pandoc.Attr("", {}, described)),
    pandoc.RawBlock("html", "<figcaption" .. id_attr .. ' class="' .. cap_classes .. '">'),
    pandoc.Plain(label),
    pandoc.RawBlock("html", "</figcaption>"),
    pandoc.RawBlock("html", "</figure>"),
  }, pandoc.Attr(id, { "quarto-float", "quarto-figure", "quarto-figure-center" }))
end

-- pandoc makes a captioned image alone in its paragraph a Figure (with the image's id)
local function figure(fig)
  return float(fig.identifier, fig.content, pandoc.utils.blocks_to_inlines(fig.caption.long))
end

-- an image without caption but with a fig- label, alone in its paragraph
local function para(p)
  local images = {}
  for _, inline in ipairs(p.content) do
    if inline.t == "Image" then
      table.insert(images, inline)
    elseif inline.t ~= "Space" and inline.t ~= "SoftBreak" then
      return nil
    end
  end
  if #images ~= 1 or not is_fig(images[1].identifier) then return nil end
  local id = images[1].identifier
  images[1].identifier = ""
  return float(id, { pandoc.Plain({ images[1] }) }, pandoc.Inlines({}))
end

local function div(d)
  if not is_fig(d.identifier) or d.classes:includes("quarto-float") then return nil end
  local content = pandoc.Blocks(d.content)
  local caption = pandoc.Inlines({})
  local last = content[#content]
  if #content > 1 and last and (last.t == "Para" or last.t == "Plain") then
    caption = last.content
    content:remove(#content)
  end
  return float(d.identifier, content, caption)
end

local function reference(c)
  local id = c.id:sub(1, 1):lower() .. c.id:sub(2)
  if not number[id] then
    return { pandoc.Strong({ pandoc.Str("?@" .. c.id) }) }
  end
  local text
  if c.mode == "SuppressAuthor" then
    text = pandoc.Inlines({ pandoc.Str(tostring(number[id])) })
  elseif #c.prefix > 0 then
    text = pandoc.Inlines(c.prefix)
    text:insert(pandoc.Str(NBSP .. number[id]))
  else
    text = pandoc.Inlines({ pandoc.Str(TITLE .. NBSP .. number[id]) })
  end
  return { pandoc.Link(text, "#" .. id, "", pandoc.Attr("", { "quarto-xref" })) }
end

local function cite(el)
  for _, c in ipairs(el.citations) do
    if not c.id:match("^[Ff]ig%-") then return nil end
  end
  local out = pandoc.Inlines({})
  for i, c in ipairs(el.citations) do
    if i > 1 then out:extend({ pandoc.Str(";"), pandoc.Space() }) end
    out:extend(reference(c))
  end
  return out
end

function Pandoc(doc)
  count(doc)
  return doc:walk({ Figure = figure, Para = para, Div = div, Cite = cite })
end

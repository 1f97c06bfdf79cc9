-- deckbuild: a path that starts with "/" names a file from the project root, as in a
-- Quarto project (https://quarto.org/docs/projects/quarto-projects.html); it is written
-- relative to the document, so it works from file:// and from any web folder.
--
--   ![](/images/a.png)   in slides/deck.qmd   ->   src="../images/a.png"
--
-- Images, links and slide backgrounds (background-image, -video, -iframe on a heading or
-- a div). "//host/x" (a URL without scheme) is left alone. The offset from the document's
-- folder to the project root comes as metadata deckbuild-project-offset ("." or "..").

local offset = "."

local function resolve(path)
  if path == nil or path:sub(1, 1) ~= "/" or path:sub(1, 2) == "//" then
    return nil
  end
  return offset .. path
end

local BACKGROUNDS = { "background-image", "background-video", "background-iframe" }

local function backgrounds(el)
  local changed = false
  for _, name in ipairs(BACKGROUNDS) do
    local resolved = resolve(el.attributes[name])
    if resolved then
      el.attributes[name] = resolved
      changed = true
    end
  end
  if changed then
    return el
  end
end

return {
  {
    Meta = function(meta)
      if meta["deckbuild-project-offset"] then
        offset = pandoc.utils.stringify(meta["deckbuild-project-offset"])
      end
    end,
  },
  {
    Image = function(el)
      local resolved = resolve(el.src)
      if resolved then
        el.src = resolved
        return el
      end
    end,
    Link = function(el)
      local resolved = resolve(el.target)
      if resolved then
        el.target = resolved
        return el
      end
    end,
    Header = backgrounds,
    Div = backgrounds,
  },
}

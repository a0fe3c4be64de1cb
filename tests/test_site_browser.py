"""The results browser in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium opens the site built from the test fixture from a
``file://`` URL, goes from the index to a heatmap, clicks a cell, and finds the run's curves and
config. Run with ``python -m pytest -m browser tests/test_site_browser.py -s`` (the screenshot's
path is printed); skipped when no browser or no selenium is found."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from playground.report import site

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).parent / "fixtures" / "results" / "fig7_cpu"
CHROMIUM = os.environ.get("CHROMIUM",
                          shutil.which("chromium") or shutil.which("chromium-browser") or "")
DRIVER = os.environ.get("CHROMEDRIVER", shutil.which("chromedriver") or "")


def browser(width: int = 1300, height: int = 1600):
    """A headless Chromium under Selenium, or a skip saying what is missing."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: "
                                    "pip install -e '.[browser]'")
    if not CHROMIUM or not DRIVER:
        pytest.skip("no Chromium / chromedriver found: apt-get install -y chromium chromium-driver "
                    "(or set CHROMIUM= and CHROMEDRIVER=)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER),
                            options=options)


def test_index_heatmap_cell_runs_in_chromium(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    out = tmp_path / "site"
    site.build([FIXTURE], out)
    driver = browser()
    try:
        driver.get((out / "index.html").as_uri())
        cards = driver.find_elements(By.CSS_SELECTOR, "a.card")
        assert (cards and driver.find_element(By.CSS_SELECTOR, "a.card img")
                .get_attribute("naturalWidth") != "0")
        cards[0].click()
        WebDriverWait(driver, 20).until(lambda d:
                                        d.find_elements(By.CSS_SELECTOR, "#heatmaps table.heatmap"))
        heatmaps = driver.find_elements(By.CSS_SELECTOR, "#heatmaps table.heatmap")
        assert len(heatmaps) == 2  # RoPE and RoPE + Canon-ABCD
        assert not driver.find_elements(By.XPATH, "//*[contains(text(), 'NaN')]")
        Select(driver.find_element(By.ID, "metric")).select_by_value("acc_k1")
        Select(driver.find_element(By.ID, "metric")).select_by_index(0)
        cell = driver.find_element(By.CSS_SELECTOR, "#heatmaps td.cell.finished")
        cell.click()
        detail = WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "run-detail"))
        loss = detail.find_elements(By.CSS_SELECTOR, "#loss-curve polyline.series")
        evals = detail.find_elements(By.CSS_SELECTOR, "#eval-curve polyline.series")
        # a line through the train rows
        assert loss and loss[0].get_attribute("points").count(",") >= 2
        assert len(evals) == 2  # accuracy at k = 1 and k = 2
        config = detail.find_element(By.CSS_SELECTOR, "pre.config").text
        assert "task:" in config and "name: depo" in config
        assert "finished" in detail.text and driver.find_elements(By.CSS_SELECTOR,
                                                                  "table.runs tr.run")
        Select(driver.find_element(By.ID, "f-canon")).select_by_value("abcd_res")  # the filter
        assert [t.find_element(By.TAG_NAME, "caption").text
                for t in driver.find_elements(By.CSS_SELECTOR, "#heatmaps table.heatmap")] == \
            ["Llama(RoPE) + Canon-ABCD(res)"]
        Select(driver.find_element(By.ID, "f-canon")).select_by_value("")
        # RoPE − RoPE + Canon
        compare = driver.find_element(By.CSS_SELECTOR, "#compare table.heatmap")
        assert len(compare.find_elements(By.CSS_SELECTOR, "td")) == 12 and " pp" in compare.text
        shot = tmp_path / "site_cell.png"
        driver.execute_script("window.scrollTo(0, 0)")
        assert driver.save_screenshot(str(shot))
        print(f"\nscreenshot: {shot}")
    finally:
        driver.quit()


def test_findings_page_links_to_the_panel_of_each_side_in_chromium(synthetic, tmp_path):
    """Index → findings.html (the forest figure loads; one row per finding cell) → a side's name
    → the panel page of its runs, whose heatmaps draw."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    root, spec, table = synthetic
    out = tmp_path / "site"
    site.build([root], out, spec)
    driver = browser()
    try:
        driver.get((out / "index.html").as_uri())
        driver.find_element(By.LINK_TEXT, "Findings").click()
        forest = WebDriverWait(driver, 20).until(lambda d: d.find_element(By.CSS_SELECTOR,
                                                                          "img.forest"))
        assert forest.get_attribute("naturalWidth") != "0"
        rows = driver.find_elements(By.CSS_SELECTOR, "table.findings tbody tr")
        assert len(rows) == len(table)
        assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, "span.verdict")] == \
            list(table["verdict"])
        rows[0].find_element(By.LINK_TEXT, "good").click()
        WebDriverWait(driver, 20).until(lambda d:
                                        d.find_elements(By.CSS_SELECTOR, "#heatmaps table.heatmap"))
        assert driver.current_url.endswith("syn_cpu__p.html")
    finally:
        driver.quit()
